import { QueueKeys } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { byKind, named, render, type K8sObject } from './support/helm';
import { validateObject } from './support/schemas';
import { deployments, plainValue, resolveEnv, serviceOf, type ResolvedEnv, type Workload } from './support/workloads';
import { loadConfig, redisKeyPrefixOf, workerConfigSchema } from '@app/common';

/**
 * redis.sentinel and redis.cluster: what the services get (REDIS_SENTINELS, REDIS_SENTINEL_*, REDIS_CLUSTER_NODES,
 * REDIS_URL still carrying TLS, user and database), the Secret, KEDA's trigger for each topology, and the egress
 * rules to nodes whose addresses come at run time.
 */
type Trigger = { type: string; name: string; metadata: Record<string, string>; authenticationRef?: { name: string } };
type ScaledObject = K8sObject & { spec: { scaleTargetRef: { name: string }; triggers: Trigger[] } };
type TriggerAuthentication = K8sObject & {
  spec: { secretTargetRef?: Array<{ parameter: string; name: string; key: string }> };
};
type Rule = { to?: unknown[]; ports?: Array<{ port: number | string; protocol: string }> };
type Policy = K8sObject & { spec: { egress: Rule[] } };

const SENTINELS = [
  'redis-node-0.redis-headless.data.svc.cluster.local:26379',
  'redis-node-1.redis-headless.data.svc.cluster.local:26379',
  'redis-node-2.redis-headless.data.svc.cluster.local:26379',
];
const NODES = ['redis-cluster.data.svc.cluster.local:6379', 'redis-cluster-5.redis-cluster-headless.data.svc:6380'];
const kedaPools = {
  pools: [
    { name: 'preview', queues: ['preview'], keda: { enabled: true }, egress: true },
    { name: 'rest', queues: ['archive', 'purge'], keda: { enabled: true } },
  ],
};
const sentinel = (extra: Record<string, unknown> = {}) => ({
  redis: { host: '', username: 'uhp', sentinel: { enabled: true, hosts: SENTINELS, ...extra } },
  workers: kedaPools,
  gateway: { networkPolicy: { enabled: true } },
});
const cluster = (extra: Record<string, unknown> = {}) => ({
  redis: { host: '', keyPrefix: 'uhp', cluster: { enabled: true, nodes: NODES }, ...extra },
  workers: kedaPools,
  gateway: { networkPolicy: { enabled: true } },
});

/** The variables of the Redis topologies, as the services' config schema names them. */
const TOPOLOGY_VARIABLES = Object.keys(workerConfigSchema.shape).filter((variable) =>
  /^REDIS_(SENTINEL|CLUSTER)/.test(variable),
);
const envOf = (objects: K8sObject[], service: string): ResolvedEnv => {
  const deployment = deployments(objects).find((d) => serviceOf(d) === service)!;
  return resolveEnv(deployment.spec.template.spec.containers[0]!, objects);
};
const topologyOf = (env: ResolvedEnv) =>
  Object.fromEntries(TOPOLOGY_VARIABLES.filter((name) => name in env).map((name) => [name, env[name]]));
const secretData = (objects: K8sObject[], name = 'uhp-uhp-files') =>
  Object.fromEntries(
    Object.entries(named<K8sObject & { data: Record<string, string> }>(objects, 'Secret', name).data).map(
      ([key, value]) => [key, Buffer.from(value, 'base64').toString()],
    ),
  );
const ruleFor = (rules: Rule[], port: number) => rules.filter((rule) => rule.ports?.some((p) => p.port === port));
const namespace = (name: string) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': name } } });

/** The part of a key Redis Cluster hashes: the first non-empty {…}, else the whole key (Redis Cluster spec). */
const hashedPart = (key: string) => {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
};

describe('redis.sentinel', () => {
  it('gives gateway and workers the sentinels, the primary’s name and both passwords; storage no Redis at all', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: sentinel({ masterSet: 'uhp-primary', username: 'watcher', auth: true, password: 'sentinel-pw' }),
    });
    for (const object of objects) expect(() => validateObject(object)).not.toThrow();
    for (const service of ['gateway', 'worker']) {
      const env = envOf(objects, service);
      expect(topologyOf(env), service).toEqual({
        REDIS_SENTINELS: { value: SENTINELS.join(',') },
        REDIS_SENTINEL_MASTER: { value: 'uhp-primary' },
        REDIS_SENTINEL_USERNAME: { value: 'watcher' },
        REDIS_SENTINEL_PASSWORD: { secret: 'uhp-uhp-files', key: 'redis-sentinel-password' },
        REDIS_SENTINEL_TLS: { value: 'false' },
      });
      // The data nodes' user, TLS and database still come from REDIS_URL (its host is the primary's name).
      expect(plainValue(env, 'REDIS_URL'), service).toBe('redis://uhp@uhp-primary:6379/0');
      expect(env.REDIS_PASSWORD, service).toEqual({ secret: 'uhp-uhp-files', key: 'redis-password' });
    }
    expect(Object.keys(envOf(objects, 'storage')).filter((name) => name.startsWith('REDIS_'))).toEqual([]);
    expect(secretData(objects)).toMatchObject({
      'redis-password': 'change-me',
      'redis-sentinel-password': 'sentinel-pw',
    });
  });

  it('defaults: primary "mymaster", sentinels without TLS, user or password; with existingSecret the key is yours', async () => {
    const plain = await render({ values: 'minimal', overrides: sentinel() });
    expect(topologyOf(envOf(plain, 'gateway'))).toEqual({
      REDIS_SENTINELS: { value: SENTINELS.join(',') },
      REDIS_SENTINEL_MASTER: { value: 'mymaster' },
      REDIS_SENTINEL_TLS: { value: 'false' },
    });
    expect(Object.keys(secretData(plain))).not.toContain('redis-sentinel-password');

    const existing = await render({
      values: 'production',
      overrides: {
        redis: { tls: true, sentinel: { enabled: true, hosts: SENTINELS, auth: true, tls: true } },
        secretKeys: { redisSentinelPassword: 'SENTINEL_PASSWORD' },
      },
    });
    const env = envOf(existing, 'worker');
    expect(env.REDIS_SENTINEL_PASSWORD).toEqual({ secret: 'uhp-files-secrets', key: 'SENTINEL_PASSWORD' });
    expect(plainValue(env, 'REDIS_SENTINEL_TLS')).toBe('true');
    expect(plainValue(env, 'REDIS_URL')).toBe('rediss://mymaster:6379/2');
    expect(byKind(existing, 'Secret')).toEqual([]);
  });

  it('scales pools with redis-sentinel triggers: the sentinels, the primary, and the sentinels’ password', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: sentinel({ username: 'watcher', auth: true, password: 'sentinel-pw' }),
    });
    const scaled = byKind(objects, 'ScaledObject') as ScaledObject[];
    expect(scaled).toHaveLength(2);
    for (const object of scaled) {
      expect(() => validateObject(object)).not.toThrow();
      for (const trigger of object.spec.triggers) {
        expect(trigger.type).toBe('redis-sentinel');
        expect(trigger.metadata).toEqual({
          addresses: SENTINELS.join(','),
          sentinelMaster: 'mymaster',
          sentinelUsername: 'watcher',
          databaseIndex: '0',
          enableTLS: 'false',
          listName: expect.stringMatching(/^bull:(preview|archive|purge):(wait|prioritized|active)$/),
          listLength: '1',
        });
        expect(trigger.authenticationRef).toEqual({ name: 'uhp-uhp-files-redis' });
      }
    }
    const [auth] = byKind(objects, 'TriggerAuthentication') as TriggerAuthentication[];
    expect(auth!.spec.secretTargetRef).toEqual([
      { parameter: 'password', name: 'uhp-uhp-files', key: 'redis-password' },
      { parameter: 'sentinelPassword', name: 'uhp-uhp-files', key: 'redis-sentinel-password' },
      { parameter: 'username', name: 'uhp-uhp-files', key: 'redis-username' },
    ]);
    // Sentinels that need no password: no sentinelPassword parameter for KEDA to miss.
    const open = await render({ values: 'minimal', overrides: sentinel() });
    expect((byKind(open, 'TriggerAuthentication')[0] as TriggerAuthentication).spec.secretTargetRef).toEqual([
      { parameter: 'password', name: 'uhp-uhp-files', key: 'redis-password' },
      { parameter: 'username', name: 'uhp-uhp-files', key: 'redis-username' },
    ]);
  });

  it('lets a pool reach the sentinels, and the data nodes in the sentinels’ namespace on redis.port', async () => {
    const objects = await render({ values: 'minimal', overrides: sentinel() });
    for (const name of ['uhp-uhp-files-worker-preview-egress', 'uhp-uhp-files-gateway']) {
      const egress = named<Policy>(objects, 'NetworkPolicy', name).spec.egress;
      // Three sentinels of one namespace: one rule.
      expect(ruleFor(egress, 26379), name).toEqual([
        { ports: [{ port: 26379, protocol: 'TCP' }], to: [namespace('data')] },
      ]);
      expect(ruleFor(egress, 6379), name).toEqual([
        { ports: [{ port: 6379, protocol: 'TCP' }], to: [namespace('data')] },
      ]);
    }
    // A sentinel given by address: that address; the data nodes it names may then be anywhere.
    const mixed = await render({
      values: 'minimal',
      overrides: sentinel({ hosts: ['10.0.0.7:26379', 'redis.data.svc:26379'] }),
    });
    const egress = named<Policy>(mixed, 'NetworkPolicy', 'uhp-uhp-files-worker-preview-egress').spec.egress;
    expect(ruleFor(egress, 26379)).toEqual([
      { ports: [{ port: 26379, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '10.0.0.7/32' } }] },
      { ports: [{ port: 26379, protocol: 'TCP' }], to: [namespace('data')] },
    ]);
    expect(ruleFor(egress, 6379)).toEqual([{ ports: [{ port: 6379, protocol: 'TCP' }] }]);
  });
});

describe('redis.cluster', () => {
  it('gives gateway and workers the seed nodes; REDIS_URL keeps TLS and user, pointing at the first seed', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: cluster({ tls: true, username: 'uhp' }),
    });
    for (const object of objects) expect(() => validateObject(object)).not.toThrow();
    for (const service of ['gateway', 'worker']) {
      const env = envOf(objects, service);
      expect(topologyOf(env), service).toEqual({ REDIS_CLUSTER_NODES: { value: NODES.join(',') } });
      expect(plainValue(env, 'REDIS_URL'), service).toBe(`rediss://uhp@${NODES[0]}/0`);
      expect(plainValue(env, 'REDIS_KEY_PREFIX'), service).toBe('uhp');
    }
  });

  it('scales pools with redis-cluster triggers on BullMQ’s keys under the hash-tagged prefix, one slot per queue', async () => {
    const objects = await render({ values: 'minimal', overrides: cluster({ tls: true }) });
    const scaled = byKind(objects, 'ScaledObject') as ScaledObject[];
    expect(scaled.map((o) => o.spec.scaleTargetRef.name).sort()).toEqual([
      'uhp-uhp-files-worker-preview',
      'uhp-uhp-files-worker-rest',
    ]);
    for (const object of scaled) {
      expect(() => validateObject(object)).not.toThrow();
      const target = named<Workload>(objects, 'Deployment', object.spec.scaleTargetRef.name);
      const env = resolveEnv(target.spec.template.spec.containers[0]!, objects);
      const queues = plainValue(env, 'WORKER_QUEUES')!.split(',');
      // The prefix the services compute from the pod's own settings.
      const prefix = redisKeyPrefixOf({
        REDIS_KEY_PREFIX: plainValue(env, 'REDIS_KEY_PREFIX')!,
        REDIS_CLUSTER_NODES: loadConfig(workerConfigSchema, {
          REDIS_CLUSTER_NODES: plainValue(env, 'REDIS_CLUSTER_NODES')!,
        }).REDIS_CLUSTER_NODES,
      });
      const expected = queues.flatMap((queue) => {
        const keys = new QueueKeys(prefix).getKeys(queue);
        return [keys.wait, keys.prioritized, keys.active];
      });
      expect(object.spec.triggers.map((t) => t.metadata.listName).sort()).toEqual(expected.sort());
      for (const trigger of object.spec.triggers) {
        expect(trigger.type).toBe('redis-cluster');
        // No databaseIndex: a cluster has database 0 only.
        expect(Object.keys(trigger.metadata).sort()).toEqual(['addresses', 'enableTLS', 'listLength', 'listName']);
        expect(trigger.metadata.addresses).toBe(NODES.join(','));
        expect(trigger.metadata.enableTLS).toBe('true');
      }
      // Every key BullMQ keeps for a queue (the watched ones among them) hashes to the same slot.
      for (const queue of queues)
        expect(new Set(Object.values(new QueueKeys(prefix).getKeys(queue)).map(hashedPart)), queue).toEqual(
          new Set(['uhp']),
        );
    }
  });

  it('lets a pool reach the seeds’ ports in their namespace; a seed given by address opens them to any address', async () => {
    const objects = await render({ values: 'minimal', overrides: cluster() });
    const egress = named<Policy>(objects, 'NetworkPolicy', 'uhp-uhp-files-worker-preview-egress').spec.egress;
    expect(ruleFor(egress, 6379)).toEqual([
      {
        ports: [
          { port: 6379, protocol: 'TCP' },
          { port: 6380, protocol: 'TCP' },
        ],
        to: [namespace('data')],
      },
    ]);
    const anywhere = await render({
      values: 'minimal',
      overrides: cluster({ cluster: { enabled: true, nodes: ['10.1.0.4:7000', 'redis-cluster.data.svc:7000'] } }),
    });
    const rules = named<Policy>(anywhere, 'NetworkPolicy', 'uhp-uhp-files-gateway').spec.egress;
    expect(ruleFor(rules, 7000)).toEqual([{ ports: [{ port: 7000, protocol: 'TCP' }] }]);
    expect(ruleFor(rules, 6379)).toEqual([]);
  });
});

describe('one Redis (the default)', () => {
  it('sets none of the Sentinel or Cluster variables and keeps the redis trigger', async () => {
    const objects = await render({ values: 'production' });
    for (const service of ['gateway', 'worker']) expect(topologyOf(envOf(objects, service)), service).toEqual({});
    const types = (byKind(objects, 'ScaledObject') as ScaledObject[]).flatMap((o) =>
      o.spec.triggers.map((t) => t.type),
    );
    expect(new Set(types)).toEqual(new Set(['redis']));
  });
});
