import { describe, expect, it } from 'vitest';
import { ciValues, renderFailure } from './support/helm';

/**
 * A bad install fails at `helm template` / `helm install`, before anything reaches the cluster, with a
 * message that says what to change (templates/checks.yaml and values.schema.json).
 */
describe('the chart refuses to render', () => {
  it('without a public base URL', async () => {
    expect(await renderFailure({ values: 'minimal', set: { publicBaseUrl: '' } })).toMatch(
      /publicBaseUrl is required: the gateway's public base URL/,
    );
    expect(await renderFailure({ values: 'minimal', set: { publicBaseUrl: 'files.example.com' } })).toMatch(
      /publicBaseUrl must be an absolute http\(s\) URL/,
    );
  });

  it('with the development storage token (or a short one)', async () => {
    expect(await renderFailure({ values: 'minimal', set: { storageToken: 'uhp-dev-storage-token' } })).toMatch(
      /storageToken is the development token \(uhp-dev-storage-token\)/,
    );
    expect(await renderFailure({ values: 'minimal', set: { storageToken: 'x'.repeat(31) } })).toMatch(
      /storageToken is shorter than 32 characters/,
    );
  });

  it('in production, with a loopback public URL or /metrics on the public API port', async () => {
    for (const url of ['http://localhost:8080', 'http://127.0.0.1', 'http://[::1]:8080/', 'http://files.localhost'])
      expect(await renderFailure({ values: 'minimal', set: { publicBaseUrl: url } }), url).toMatch(
        /publicBaseUrl points to a loopback address .* \(environment: production\)/,
      );
    expect(await renderFailure({ values: 'minimal', overrides: { gateway: { apiMetrics: true } } })).toMatch(
      /gateway.apiMetrics serves \/metrics on the public API port, which production refuses/,
    );
  });

  it('with the storage service behind the Ingress', async () => {
    const overrides = {
      ingress: {
        enabled: true,
        hosts: [{ host: 'files.example.com', paths: [{ path: '/internal', backend: 'storage' }] }],
      },
    };
    expect(await renderFailure({ values: 'minimal', overrides })).toMatch(
      /ingress: files.example.com\/internal routes to the storage service; .* never put behind the Ingress/,
    );
  });

  it('with KEDA and an HPA both on for one pool', async () => {
    const production = ciValues('production') as { workers: { pools: Array<Record<string, unknown>> } };
    const pools = production.workers.pools.map((pool) =>
      pool.name === 'preview' ? { ...pool, hpa: { ...(pool.hpa as object), enabled: true } } : pool,
    );
    expect(await renderFailure({ values: 'production', overrides: { workers: { pools } } })).toMatch(
      /workers.pools\[preview\]: keda.enabled and hpa.enabled are both true; a pool scales on its queue depth \(KEDA\) or on CPU \(HPA\), not both/,
    );
  });

  it('with a pool told to read straight from S3 whose egress policy does not let it reach S3', async () => {
    const production = ciValues('production') as { workers: { pools: Array<Record<string, unknown>> } };
    const pools = production.workers.pools.map((pool) =>
      pool.name === 'preview' ? { ...pool, egress: true, env: { STORAGE_DIRECT_READS: 'true' } } : pool,
    );
    expect(await renderFailure({ values: 'production', overrides: { workers: { pools } } })).toMatch(
      /workers.pools\[preview\]: env.STORAGE_DIRECT_READS is true but the pool's egress policy/,
    );
  });

  it('with the removed UHP_MAX_UPLOAD_BYTES among a component’s settings', async () => {
    for (const component of ['gateway', 'storage'])
      expect(
        await renderFailure({ values: 'minimal', overrides: { [component]: { env: { UHP_MAX_UPLOAD_BYTES: '1' } } } }),
      ).toContain(
        `${component}.env.UHP_MAX_UPLOAD_BYTES was removed: maxFileBytes (UHP_MAX_FILE_BYTES) now caps every file`,
      );
  });

  it('with values the schema does not allow (an unknown queue, a misspelt key)', async () => {
    expect(await renderFailure({ values: 'minimal', set: { 'redis.hots': 'x' } })).toMatch(
      /additional properties 'hots' not allowed|hots/,
    );
    expect(await renderFailure({ values: 'minimal', set: { logLevel: 'loud' } })).toMatch(/logLevel/);
  });

  it('with Redis under both Sentinel and Cluster, or either without its hosts', async () => {
    const sentinel = { enabled: true, hosts: ['redis.data.svc:26379'] };
    const cluster = { enabled: true, nodes: ['redis-cluster.data.svc:6379'] };
    expect(await renderFailure({ values: 'minimal', overrides: { redis: { sentinel, cluster } } })).toMatch(
      /redis.sentinel.enabled and redis.cluster.enabled are both true: Redis is either a primary with replicas under Sentinel or a Redis Cluster/,
    );
    expect(
      await renderFailure({ values: 'minimal', overrides: { redis: { sentinel: { ...sentinel, hosts: [] } } } }),
    ).toMatch(/redis.sentinel.hosts is empty: list the sentinels as host:port/);
    expect(
      await renderFailure({ values: 'minimal', overrides: { redis: { cluster: { ...cluster, nodes: [] } } } }),
    ).toMatch(/redis.cluster.nodes is empty: list some nodes of the cluster as host:port/);
    // A host without its port: the schema says where.
    expect(
      await renderFailure({ values: 'minimal', overrides: { redis: { sentinel: { ...sentinel, hosts: ['redis'] } } } }),
    ).toMatch(/redis.sentinel.hosts.0: Does not match pattern/);
    // One server still needs its host; Sentinel and Cluster do not.
    expect(await renderFailure({ values: 'minimal', set: { 'redis.host': '' } })).toMatch(/redis.host is required/);
  });

  it('with a Redis Cluster on a database other than 0, or sentinels whose password is missing', async () => {
    const cluster = { enabled: true, nodes: ['redis-cluster.data.svc:6379'] };
    expect(await renderFailure({ values: 'minimal', overrides: { redis: { db: 3, cluster } } })).toMatch(
      /redis.db is 3 but a Redis Cluster has only database 0/,
    );
    const sentinel = { enabled: true, hosts: ['redis.data.svc:26379'], auth: true };
    expect(await renderFailure({ values: 'minimal', overrides: { redis: { sentinel } } })).toMatch(
      /redis.sentinel.password is required with redis.sentinel.auth/,
    );
  });

  it('with a KEDA pool under Sentinel when sentinels and data nodes differ in TLS (KEDA has one setting)', async () => {
    const overrides = {
      redis: { tls: true, sentinel: { enabled: true, hosts: ['redis.data.svc:26379'], tls: false } },
    };
    expect(await renderFailure({ values: 'production', overrides })).toMatch(
      /workers.pools\[preview\] scales with KEDA, whose redis-sentinel scaler has one TLS setting for sentinels and data nodes, but redis.tls is true and redis.sentinel.tls is false/,
    );
  });

  it('with a direct database URL that would be ignored, or promised and missing', async () => {
    expect(
      await renderFailure({
        values: 'production',
        overrides: { database: { directUrl: 'postgresql://uhp@postgres.db.svc:5432/uhp' } },
      }),
    ).toContain(
      'database.directUrl is unused with existingSecret: put the direct URL in the Secret uhp-files-secrets under the key database-direct-url',
    );
    expect(await renderFailure({ values: 'minimal', overrides: { database: { hasDirectUrl: true } } })).toMatch(
      /database.hasDirectUrl is true but database.directUrl is empty/,
    );
  });

  it('without S3 keys while static credentials are on', async () => {
    expect(await renderFailure({ values: 'minimal', set: { 's3.accessKeyId': '' } })).toMatch(
      /s3.accessKeyId and s3.secretAccessKey are required with s3.staticCredentials/,
    );
  });
});
