import { describe, expect, it } from 'vitest';
import { gatewayConfigSchema, parseRedisAddress, workerConfigSchema } from '../config/config.schema';
import { ConfigError, loadConfig } from '../config/load-config';
import { describeRedisTopology, redisConnectionPlanOf, redisKeyPrefixOf, redisTopologyOf } from './redis-topology';

const worker = (env: Record<string, string>) => loadConfig(workerConfigSchema, env);

describe('Redis topology settings', () => {
  it('reads host:port lists, IPv6 in brackets included, and refuses anything else naming the entry', () => {
    expect(parseRedisAddress('redis-0.redis:26379')).toEqual({ host: 'redis-0.redis', port: 26379 });
    expect(parseRedisAddress('[::1]:26379')).toEqual({ host: '::1', port: 26379 });
    for (const bad of ['redis://a:1', 'a', 'a:', 'a:0', 'a:65536', 'a:1/2', ':1'])
      expect(parseRedisAddress(bad), bad).toBeUndefined();
    const config = worker({ REDIS_SENTINELS: ' s1:26379, s2:26380 ,' });
    expect(config.REDIS_SENTINELS).toEqual([
      { host: 's1', port: 26379 },
      { host: 's2', port: 26380 },
    ]);
    expect(() => worker({ REDIS_CLUSTER_NODES: 'n1:7000,redis://n2:7001' })).toThrow(/"redis:\/\/n2:7001"/);
  });

  it('refuses Sentinel and Cluster together, and a cluster on a database other than 0', () => {
    expect(() => worker({ REDIS_SENTINELS: 's:26379', REDIS_CLUSTER_NODES: 'n:7000' })).toThrow(ConfigError);
    expect(() => loadConfig(gatewayConfigSchema, { REDIS_SENTINELS: 's:1', REDIS_CLUSTER_NODES: 'n:2' })).toThrow(
      /REDIS_CLUSTER_NODES.*cannot be set with REDIS_SENTINELS/,
    );
    expect(() => worker({ REDIS_CLUSTER_NODES: 'n:7000', REDIS_URL: 'redis://n:7000/3' })).toThrow(/database 3/);
    expect(worker({ REDIS_CLUSTER_NODES: 'n:7000', REDIS_URL: 'redis://n:7000/0' }).REDIS_CLUSTER_NODES).toHaveLength(
      1,
    );
  });

  it('keeps one Redis as it was: the URL, its own password first, fail-fast on request paths only', () => {
    const config = worker({ REDIS_URL: 'rediss://r.example:6380/2', REDIS_PASSWORD: 'p', REDIS_KEY_PREFIX: 'uhp' });
    expect(redisTopologyOf(config)).toEqual({ mode: 'standalone', address: { host: 'r.example', port: 6380 } });
    expect(redisKeyPrefixOf(config)).toBe('uhp');
    const plan = redisConnectionPlanOf(config, { failFast: true });
    expect(plan).toMatchObject({
      mode: 'standalone',
      options: {
        url: 'rediss://r.example:6380/2',
        password: 'p',
        maxRetriesPerRequest: null,
        enableOfflineQueue: false,
      },
    });
    const own = redisConnectionPlanOf(worker({ REDIS_URL: 'redis://:own@r:1', REDIS_PASSWORD: 'p' }), {
      failFast: false,
    });
    expect(own.options).not.toHaveProperty('password');
    expect(own.options).not.toHaveProperty('enableOfflineQueue');
  });

  it('asks the sentinels for the primary, with their own credentials and TLS apart from the data nodes', () => {
    const config = worker({
      REDIS_SENTINELS: 's1:26379,s2:26379',
      REDIS_SENTINEL_MASTER: 'files',
      REDIS_SENTINEL_USERNAME: 'watcher',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
      REDIS_SENTINEL_TLS: 'true',
      REDIS_URL: 'rediss://app:data%20secret@ignored:1/4',
    });
    expect(describeRedisTopology(redisTopologyOf(config))).toBe(
      'Redis under Sentinel, primary "files" from s1:26379, s2:26379',
    );
    const { options } = redisConnectionPlanOf(config, { failFast: false });
    expect(options).toMatchObject({
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'files',
      sentinelUsername: 'watcher',
      sentinelPassword: 'sentinel-secret',
      sentinelTLS: {},
      username: 'app',
      password: 'data secret',
      db: 4,
      tls: {},
      enableTLSForSentinelMode: true,
      failoverDetector: true,
    });
    expect(options).not.toHaveProperty('url');
    expect(options).not.toHaveProperty('host');
  });

  it('puts every key of a cluster under a hash tag, and follows a failover by reconnecting on READONLY', () => {
    const config = worker({ REDIS_CLUSTER_NODES: 'n1:7000,n2:7001', REDIS_KEY_PREFIX: 'uhp', REDIS_PASSWORD: 'p' });
    expect(redisKeyPrefixOf(config)).toBe('{uhp}');
    const plan = redisConnectionPlanOf(config, { failFast: true });
    expect(plan.mode).toBe('cluster');
    if (plan.mode !== 'cluster') return;
    expect(plan.nodes).toEqual([
      { host: 'n1', port: 7000 },
      { host: 'n2', port: 7001 },
    ]);
    expect(plan.options).toMatchObject({ enableOfflineQueue: false, redisOptions: { password: 'p' } });
    const reconnect = plan.options.redisOptions?.reconnectOnError as (error: Error) => unknown;
    expect(reconnect(new Error("READONLY You can't write against a read only replica."))).toBe(2);
    expect(reconnect(new Error('ERR wrong number of arguments'))).toBe(false);
  });
});
