// Types only: the storage service, which uses no Redis, loads this library without loading a Redis client.
import type { ClusterOptions, RedisOptions } from 'ioredis';
import type { RedisAddress } from '../config/config.schema';

/** The Redis settings of a process (config.schema.ts, "redis"). */
export interface RedisSettings {
  REDIS_URL: string;
  REDIS_PASSWORD?: string;
  REDIS_KEY_PREFIX: string;
  REDIS_SENTINELS: RedisAddress[];
  REDIS_SENTINEL_MASTER: string;
  REDIS_SENTINEL_USERNAME?: string;
  REDIS_SENTINEL_PASSWORD?: string;
  REDIS_SENTINEL_TLS: boolean;
  REDIS_CLUSTER_NODES: RedisAddress[];
}

export type RedisTopology =
  | { mode: 'standalone'; address: RedisAddress }
  | { mode: 'sentinel'; master: string; sentinels: RedisAddress[] }
  | { mode: 'cluster'; nodes: RedisAddress[] };

export function redisTopologyOf(settings: RedisSettings): RedisTopology {
  if (settings.REDIS_CLUSTER_NODES.length > 0) return { mode: 'cluster', nodes: settings.REDIS_CLUSTER_NODES };
  if (settings.REDIS_SENTINELS.length > 0)
    return { mode: 'sentinel', master: settings.REDIS_SENTINEL_MASTER, sentinels: settings.REDIS_SENTINELS };
  const url = new URL(settings.REDIS_URL);
  return {
    mode: 'standalone',
    address: { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 6379) },
  };
}

/**
 * The prefix of every queue key. On a cluster it is a hash tag (`{uhp}`), so that every key of a queue lands
 * on one slot: BullMQ's scripts touch several keys of a queue at once, which a cluster allows only within a slot.
 */
export function redisKeyPrefixOf(settings: Pick<RedisSettings, 'REDIS_KEY_PREFIX' | 'REDIS_CLUSTER_NODES'>): string {
  return settings.REDIS_CLUSTER_NODES.length > 0 ? `{${settings.REDIS_KEY_PREFIX}}` : settings.REDIS_KEY_PREFIX;
}

export interface RedisClientOptions {
  /** A request path must not wait for Redis (the gateway); a worker may queue commands until it is back. */
  failFast: boolean;
}

/**
 * After a failover the old primary comes back as a replica; a connection still open to it is refused writes
 * with READONLY. Reconnecting (to the primary the sentinels or the cluster name now) and sending the command
 * again is the way out; 2 = reconnect and resend.
 */
const reconnectOnReadOnly = (error: Error): 2 | false => (error.message.startsWith('READONLY') ? 2 : false);

/** What every connection to a data node carries: REDIS_URL's user, password, database and TLS, and REDIS_PASSWORD. */
function dataNodeOptions(settings: RedisSettings, options: RedisClientOptions): RedisOptions {
  const url = new URL(settings.REDIS_URL);
  const db = Number(url.pathname.replace(/^\//, '') || 0);
  const password = url.password ? decodeURIComponent(url.password) : settings.REDIS_PASSWORD;
  return {
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(password ? { password } : {}),
    ...(db ? { db } : {}),
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    maxRetriesPerRequest: null,
    reconnectOnError: reconnectOnReadOnly,
    ...(options.failFast ? { enableOfflineQueue: false } : {}),
  };
}

/** How to connect, for the topology the settings name: ioredis options, or a Cluster's seed nodes and options. */
export type RedisConnectionPlan =
  | { mode: 'cluster'; nodes: RedisAddress[]; options: ClusterOptions }
  | { mode: 'standalone' | 'sentinel'; options: RedisOptions & { url?: string } };

/**
 * The ioredis options of every connection of a process. A `rediss://` URL turns TLS on, verified against Node's
 * trusted CAs, NODE_EXTRA_CA_CERTS included, and the host connected to (test/integration/tls proves it).
 */
export function redisConnectionPlanOf(settings: RedisSettings, options: RedisClientOptions): RedisConnectionPlan {
  const topology = redisTopologyOf(settings);
  if (topology.mode === 'cluster')
    return {
      mode: 'cluster',
      nodes: topology.nodes,
      options: {
        redisOptions: dataNodeOptions(settings, options),
        enableOfflineQueue: !options.failFast,
        // A node that is gone is found again through the others; keep trying, as with one Redis.
        clusterRetryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
      },
    };
  if (topology.mode === 'sentinel')
    return {
      mode: 'sentinel',
      options: {
        ...dataNodeOptions(settings, options),
        sentinels: topology.sentinels,
        name: topology.master,
        ...(settings.REDIS_SENTINEL_USERNAME ? { sentinelUsername: settings.REDIS_SENTINEL_USERNAME } : {}),
        ...(settings.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: settings.REDIS_SENTINEL_PASSWORD } : {}),
        ...(settings.REDIS_SENTINEL_TLS ? { sentinelTLS: {} } : {}),
        // ioredis applies `tls` to the data nodes found through the sentinels only when asked to.
        enableTLSForSentinelMode: new URL(settings.REDIS_URL).protocol === 'rediss:',
        // Hears +switch-master from the sentinels at once, rather than at the next failed command.
        failoverDetector: true,
      },
    };
  const password = new URL(settings.REDIS_URL).password ? undefined : settings.REDIS_PASSWORD;
  return {
    mode: 'standalone',
    options: {
      url: settings.REDIS_URL,
      // Used when the URL carries no password (ioredis lets the URL's own win).
      ...(password ? { password } : {}),
      maxRetriesPerRequest: null,
      reconnectOnError: reconnectOnReadOnly,
      ...(options.failFast ? { enableOfflineQueue: false } : {}),
    },
  };
}

/** A short description of where the settings point, for logs and the doctor (never a password). */
export function describeRedisTopology(topology: RedisTopology): string {
  const list = (addresses: RedisAddress[]) => addresses.map(formatAddress).join(', ');
  if (topology.mode === 'cluster') return `Redis Cluster through ${list(topology.nodes)}`;
  if (topology.mode === 'sentinel')
    return `Redis under Sentinel, primary "${topology.master}" from ${list(topology.sentinels)}`;
  return `one Redis at ${formatAddress(topology.address)}`;
}

export function formatAddress(address: RedisAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
