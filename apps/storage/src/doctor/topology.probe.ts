import { Cluster, Redis } from 'ioredis';
import { Client } from 'pg';
import {
  describeRedisTopology,
  formatAddress,
  redisConnectionPlanOf,
  redisKeyPrefixOf,
  redisTopologyOf,
  type DoctorConfig,
  type RedisAddress,
  type RedisSettings,
} from '@app/common';

/** How long one probe of a dependency may take: the doctor reports a silent one rather than hang on it. */
const PROBE_TIMEOUT_MS = 5_000;

export interface PostgresEndpoint {
  /** host:port/database, never the password. */
  url: string;
  server?: string;
  /** The port the server itself listens on; another than the URL's means something sits in between. */
  serverPort?: number;
  error?: string;
}

export interface TopologyReport {
  postgres: {
    /** DATABASE_URL: what the services use. */
    services: PostgresEndpoint;
    /** DATABASE_DIRECT_URL, when set: what migrations and the CLIs use. */
    direct?: PostgresEndpoint;
    /** DATABASE_URL reaches Postgres through a pooler or proxy (its port is not the server's). */
    throughPooler: boolean;
  };
  redis?: {
    mode: 'standalone' | 'sentinel' | 'cluster';
    configured: string;
    /** The queue key prefix as the services use it (a hash tag on a cluster). */
    keyPrefix: string;
    primary?: string;
    replicas?: number;
    sentinelsAnswering?: number;
    sentinels?: number;
    clusterState?: string;
    primaries?: number;
    version?: string;
    error?: string;
  };
  /** What an operator should look at: a pooler with no direct URL for migrations, a sentinel not answering… */
  warnings: string[];
}

const redactedUrl = (raw: string) => {
  const url = new URL(raw);
  return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
};
const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * What the doctor finds of the setup it runs against: Postgres directly or through a pooler, Redis alone, under
 * Sentinel or as a Cluster. Read only; every probe bounded, a failure reported beside the rest.
 */
export class TopologyProbe {
  constructor(private readonly config: DoctorConfig) {}

  async report(): Promise<TopologyReport> {
    const warnings: string[] = [];
    const services = await this.postgres(this.config.DATABASE_URL);
    const direct = this.config.DATABASE_DIRECT_URL ? await this.postgres(this.config.DATABASE_DIRECT_URL) : undefined;
    const urlPort = Number(new URL(this.config.DATABASE_URL).port || 5432);
    const throughPooler = services.serverPort !== undefined && services.serverPort !== urlPort;
    if (throughPooler && !direct)
      warnings.push(
        'DATABASE_URL reaches Postgres through something listening on another port (a pooler?) and ' +
          'DATABASE_DIRECT_URL is unset: migrations need a direct connection if that is PgBouncer in transaction mode',
      );
    const redis = this.redisConfigured() ? await this.redis(warnings) : undefined;
    return { postgres: { services, ...(direct ? { direct } : {}), throughPooler }, redis, warnings };
  }

  private redisConfigured(): boolean {
    return (
      this.config.REDIS_URL !== undefined ||
      this.config.REDIS_SENTINELS.length > 0 ||
      this.config.REDIS_CLUSTER_NODES.length > 0
    );
  }

  private async postgres(url: string): Promise<PostgresEndpoint> {
    const endpoint: PostgresEndpoint = { url: redactedUrl(url) };
    const client = new Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
    try {
      await client.connect();
      const { rows } = await client.query<{ server: string; port: string }>(
        "SELECT current_setting('server_version') AS server, current_setting('port') AS port",
      );
      endpoint.server = `PostgreSQL ${rows[0].server}`;
      endpoint.serverPort = Number(rows[0].port);
    } catch (error) {
      endpoint.error = reason(error);
    } finally {
      await client.end().catch(() => undefined);
    }
    return endpoint;
  }

  private async redis(warnings: string[]): Promise<TopologyReport['redis']> {
    const settings: RedisSettings = { ...this.config, REDIS_URL: this.config.REDIS_URL ?? 'redis://127.0.0.1:6379' };
    const topology = redisTopologyOf(settings);
    const report: NonNullable<TopologyReport['redis']> = {
      mode: topology.mode,
      configured: describeRedisTopology(topology),
      keyPrefix: redisKeyPrefixOf(settings),
    };
    const plan = redisConnectionPlanOf(settings, { failFast: true });
    try {
      if (plan.mode === 'cluster') await this.cluster(plan.nodes, plan.options, report, warnings);
      else {
        // As BullMQ does: ioredis takes a URL as its own argument, not among the options.
        const { url, ...options } = plan.options;
        const probeOptions = {
          ...options,
          lazyConnect: true,
          connectTimeout: PROBE_TIMEOUT_MS,
          retryStrategy: () => null,
        };
        const client = url ? new Redis(url, probeOptions) : new Redis(probeOptions);
        try {
          await client.connect();
          const replication = parseInfo(await client.info('replication'));
          report.version = parseInfo(await client.info('server')).redis_version;
          report.primary = `${client.options.host ?? '?'}:${client.options.port ?? '?'}`;
          report.replicas = Number(replication.connected_slaves ?? 0);
          if (replication.role !== 'master') warnings.push(`Redis answers as ${replication.role}, not as a primary`);
        } finally {
          client.disconnect();
        }
        if (topology.mode === 'sentinel') await this.sentinels(topology.master, topology.sentinels, report, warnings);
      }
    } catch (error) {
      report.error = reason(error);
      warnings.push(`Redis: ${report.error}`);
    }
    return report;
  }

  private async sentinels(
    master: string,
    sentinels: RedisAddress[],
    report: NonNullable<TopologyReport['redis']>,
    warnings: string[],
  ): Promise<void> {
    let answering = 0;
    const primaries = new Set<string>();
    for (const address of sentinels) {
      const sentinel = new Redis({
        ...address,
        ...(this.config.REDIS_SENTINEL_USERNAME ? { username: this.config.REDIS_SENTINEL_USERNAME } : {}),
        ...(this.config.REDIS_SENTINEL_PASSWORD ? { password: this.config.REDIS_SENTINEL_PASSWORD } : {}),
        ...(this.config.REDIS_SENTINEL_TLS ? { tls: {} } : {}),
        lazyConnect: true,
        connectTimeout: PROBE_TIMEOUT_MS,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      try {
        await sentinel.connect();
        const [host, port] =
          ((await sentinel.call('SENTINEL', 'get-master-addr-by-name', master)) as string[] | null) ?? [];
        if (host) primaries.add(`${host}:${port}`);
        answering++;
      } catch (error) {
        warnings.push(`sentinel ${formatAddress(address)}: ${reason(error)}`);
      } finally {
        sentinel.disconnect();
      }
    }
    report.sentinels = sentinels.length;
    report.sentinelsAnswering = answering;
    if (primaries.size > 1) warnings.push(`the sentinels disagree on the primary: ${[...primaries].join(', ')}`);
    if (primaries.size === 1) report.primary = [...primaries][0];
    if (answering < Math.floor(sentinels.length / 2) + 1)
      warnings.push(`only ${answering} of ${sentinels.length} sentinels answer: a failover needs a majority`);
  }

  private async cluster(
    nodes: RedisAddress[],
    options: ConstructorParameters<typeof Cluster>[1],
    report: NonNullable<TopologyReport['redis']>,
    warnings: string[],
  ): Promise<void> {
    const cluster = new Cluster(nodes, { ...options, lazyConnect: true, clusterRetryStrategy: () => null });
    try {
      await cluster.connect();
      const info = parseInfo((await cluster.call('CLUSTER', 'INFO')) as string);
      report.clusterState = info.cluster_state;
      report.primaries = Number(info.cluster_size ?? 0);
      report.version = parseInfo(await cluster.info('server')).redis_version;
      if (info.cluster_state !== 'ok') warnings.push(`the cluster's state is ${info.cluster_state}`);
    } finally {
      cluster.disconnect();
    }
  }
}

/** `key:value` lines of INFO (and CLUSTER INFO). */
function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields[line.slice(0, colon)] = line.slice(colon + 1).trim();
  }
  return fields;
}

/** The report as the doctor's text lines. */
export function describeTopology(report: TopologyReport): string[] {
  const endpoint = (name: string, e: PostgresEndpoint) =>
    `${name} ${e.url}: ${e.error ? `unreachable (${e.error})` : `${e.server}, server port ${e.serverPort}`}`;
  const lines = [
    `topology: postgres: ${endpoint('DATABASE_URL', report.postgres.services)}` +
      (report.postgres.throughPooler ? ' (through a pooler)' : ''),
  ];
  if (report.postgres.direct)
    lines.push(`topology: postgres: ${endpoint('DATABASE_DIRECT_URL', report.postgres.direct)}`);
  const redis = report.redis;
  if (redis) {
    const found = [
      redis.primary && `primary ${redis.primary}`,
      redis.replicas !== undefined && `${redis.replicas} replica(s)`,
      redis.sentinels !== undefined && `${redis.sentinelsAnswering} of ${redis.sentinels} sentinels answer`,
      redis.clusterState && `cluster state ${redis.clusterState}, ${redis.primaries} primaries`,
      redis.version && `Redis ${redis.version}`,
      `queue keys "${redis.keyPrefix}:…"`,
    ].filter(Boolean);
    lines.push(
      `topology: redis: ${redis.configured}: ${redis.error ? `unreachable (${redis.error})` : found.join(', ')}`,
    );
  }
  for (const warning of report.warnings) lines.push(`topology: warning: ${warning}`);
  return lines;
}
