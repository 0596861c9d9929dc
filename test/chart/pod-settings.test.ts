import { describe, expect, it } from 'vitest';
import { byKind, render, renderFailure, type K8sObject } from './support/helm';
import { validateObject } from './support/schemas';
import { workloads, type Workload } from './support/workloads';

/**
 * The escape hatches: every pod setting at the top level (all pods) and under gateway, storage,
 * workers.poolDefaults (a pool entry) and migrate. Each value carries the tag of where it was set, so each test
 * can say which pods must have it, and that no other pod does.
 */
type Tag = 'top' | 'gateway' | 'storage' | 'pool' | 'archive' | 'migrate';

const hatches = (tag: Tag) => ({
  extraEnv: [{ name: `E_${tag.toUpperCase()}`, value: tag }],
  extraEnvFrom: [{ secretRef: { name: `env-${tag}` } }],
  extraVolumes: [{ name: `vol-${tag}`, emptyDir: {} }],
  extraVolumeMounts: [{ name: `vol-${tag}`, mountPath: `/mnt/${tag}`, readOnly: true }],
  initContainers: [{ name: `init-${tag}`, image: `init:${tag}` }],
  sidecars: [{ name: `side-${tag}`, image: `side:${tag}` }],
  podAnnotations: { [`example.com/a-${tag}`]: tag },
  podLabels: { [`example.com/l-${tag}`]: tag },
  nodeSelector: { [`example.com/n-${tag}`]: tag },
  tolerations: [{ key: `t-${tag}`, operator: 'Exists', effect: 'NoSchedule' }],
  topologySpreadConstraints: [
    {
      maxSkew: 3,
      topologyKey: `example.com/zone-${tag}`,
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: { tag } },
    },
  ],
});
const LIST_KEYS = ['extraEnv', 'extraEnvFrom', 'extraVolumes', 'initContainers', 'sidecars'] as const;

const pools = [
  { name: 'preview', queues: ['preview'] },
  // A pool entry's own lists replace those of poolDefaults; its maps merge with them.
  { name: 'archive', queues: ['archive'], ...hatches('archive') },
  { name: 'purge', queues: ['purge'] },
];

const values = {
  ...hatches('top'),
  priorityClassName: 'top-priority',
  runtimeClassName: 'top-runtime',
  affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: top() }] } },
  deploymentAnnotations: { 'example.com/d-top': 'top' },
  gateway: {
    ...hatches('gateway'),
    priorityClassName: 'gateway-priority',
    strategy: { type: 'Recreate' },
    deploymentAnnotations: { 'example.com/d-gateway': 'gateway' },
  },
  storage: { ...hatches('storage'), runtimeClassName: 'gvisor', terminationGracePeriodSeconds: 77 },
  workers: { pools, poolDefaults: { ...hatches('pool'), terminationGracePeriodSeconds: 0 } },
  migrate: {
    ...hatches('migrate'),
    podAnnotations: { 'sidecar.istio.io/inject': 'false', 'example.com/a-migrate': 'migrate' },
    affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } },
  },
};

function top() {
  return { matchExpressions: [{ key: 'example.com/pool', operator: 'In', values: ['uhp'] }] };
}

/** Where each workload's settings come from, in order. */
const SOURCES: Record<string, Tag[]> = {
  'uhp-uhp-files-gateway': ['top', 'gateway'],
  'uhp-uhp-files-storage': ['top', 'storage'],
  'uhp-uhp-files-worker-preview': ['top', 'pool'],
  'uhp-uhp-files-worker-archive': ['top', 'archive'],
  'uhp-uhp-files-worker-purge': ['top', 'pool'],
  'uhp-uhp-files-migrate': ['top', 'migrate'],
};
/** Maps merge: the archive pool keeps poolDefaults' keys beside its own. */
const MAP_SOURCES: Record<string, Tag[]> = { ...SOURCES, 'uhp-uhp-files-worker-archive': ['top', 'pool', 'archive'] };

type Pod = Workload['spec']['template']['spec'] & Record<string, unknown>;
const podOf = (workload: Workload) => workload.spec.template.spec as Pod;
/** The tags of the entries a test added, in order (entries of the chart's own carry none). */
const tagged = <T>(items: T[] | undefined, tagOf: (item: T) => string | undefined): string[] =>
  (items ?? []).map(tagOf).filter((tag): tag is string => tag !== undefined);

describe('pod settings at the top level and per component (the escape hatches)', () => {
  const rendered = () => render({ values: 'minimal', overrides: values });

  it('renders objects valid against the Kubernetes schemas, one workload per expected pod', async () => {
    const objects = await rendered();
    for (const object of objects) expect(() => validateObject(object)).not.toThrow();
    expect(
      workloads(objects)
        .map((w) => w.metadata.name)
        .sort(),
    ).toEqual(Object.keys(SOURCES).sort());
  });

  it("lists add up: each pod gets the top level entries, then its own, and no other component's", async () => {
    const objects = await rendered();
    for (const workload of workloads(objects)) {
      const want = SOURCES[workload.metadata.name]!;
      const pod = podOf(workload);
      const main = pod.containers[0]!;
      const suffixOf = (name: string | undefined, prefix: string) =>
        name?.startsWith(prefix) ? name.slice(prefix.length) : undefined;
      const got = {
        extraEnv: tagged(main.env, (e) => (/^E_[A-Z]+$/.test(e.name) ? e.name.slice(2).toLowerCase() : undefined)),
        extraEnvFrom: tagged(main.envFrom, (e) => suffixOf(e.secretRef?.name, 'env-')),
        extraVolumes: tagged(pod.volumes, (v) => suffixOf(v.name, 'vol-')),
        initContainers: tagged(pod.initContainers, (c) => suffixOf(c.name, 'init-')),
        sidecars: tagged(pod.containers.slice(1), (c) => suffixOf(c.name, 'side-')),
      };
      for (const key of LIST_KEYS) expect(got[key], `${workload.metadata.name} ${key}`).toEqual(want);
      expect(main.volumeMounts!.filter((m) => m.mountPath.startsWith('/mnt/')).map((m) => m.mountPath)).toEqual(
        want.map((tag) => `/mnt/${tag}`),
      );
      expect(pod.tolerations).toEqual(want.map((tag) => expect.objectContaining({ key: `t-${tag}` })));
      // Topology spread constraints set anywhere replace the generated ones.
      expect((pod.topologySpreadConstraints ?? []).map((c) => c.topologyKey)).toEqual(
        want.map((tag) => `example.com/zone-${tag}`),
      );
    }
  });

  it("maps merge key by key: podAnnotations, podLabels and nodeSelector hold the top level's and the component's", async () => {
    const objects = await rendered();
    for (const workload of workloads(objects)) {
      const want = MAP_SOURCES[workload.metadata.name]!;
      const { labels, annotations } = workload.spec.template.metadata;
      const ours = (map: Record<string, string> | undefined, prefix: string) =>
        Object.keys(map ?? {})
          .filter((key) => key.startsWith(prefix))
          .map((key) => key.slice(prefix.length))
          .sort();
      expect(ours(annotations, 'example.com/a-'), workload.metadata.name).toEqual([...want].sort());
      expect(ours(labels, 'example.com/l-'), workload.metadata.name).toEqual([...want].sort());
      expect(ours(podOf(workload).nodeSelector as Record<string, string>, 'example.com/n-')).toEqual([...want].sort());
    }
  });

  it("the chart keeps its own labels and checksums; the Job takes pod annotations such as Istio's", async () => {
    const objects = await render({
      values: 'minimal',
      overrides: {
        podLabels: { 'app.kubernetes.io/component': 'hijacked' },
        podAnnotations: { 'checksum/secret': 'x' },
      },
    });
    for (const workload of workloads(objects)) {
      expect(workload.spec.template.metadata.labels['app.kubernetes.io/component']).not.toBe('hijacked');
      if (workload.kind === 'Deployment')
        expect(workload.spec.template.metadata.annotations!['checksum/secret']).toMatch(/^[0-9a-f]{64}$/);
    }
    const job = workloads(await rendered()).find((w) => w.kind === 'Job')!;
    expect(job.spec.template.metadata.annotations!['sidecar.istio.io/inject']).toBe('false');
  });

  it("single values and affinity: the component's wins, else the top level's; extraEnv overrides the chart's env", async () => {
    const objects = await render({
      values: 'minimal',
      overrides: {
        ...values,
        gateway: {
          ...values.gateway,
          extraEnv: [
            { name: 'LOG_LEVEL', value: 'debug' },
            { name: 'STORAGE_TOKEN', valueFrom: { secretKeyRef: { name: 'vault-storage', key: 'token' } } },
          ],
        },
      },
    });
    const byName = Object.fromEntries(workloads(objects).map((w) => [w.metadata.name, w]));
    const gateway = byName['uhp-uhp-files-gateway']!;
    const storage = byName['uhp-uhp-files-storage']!;
    const preview = byName['uhp-uhp-files-worker-preview']!;
    const migrateJob = byName['uhp-uhp-files-migrate']!;
    expect(podOf(gateway).priorityClassName).toBe('gateway-priority');
    expect(podOf(storage).priorityClassName).toBe('top-priority');
    expect(podOf(migrateJob).priorityClassName).toBe('top-priority');
    expect(podOf(storage).runtimeClassName).toBe('gvisor');
    expect(podOf(gateway).runtimeClassName).toBe('top-runtime');
    expect(podOf(storage).terminationGracePeriodSeconds).toBe(77);
    expect(podOf(preview).terminationGracePeriodSeconds).toBe(0);
    expect(podOf(gateway).terminationGracePeriodSeconds).toBe(45); // derived: preStop 5 s + drain 30 s + 10 s
    expect(podOf(gateway).affinity).toEqual(values.affinity);
    expect(podOf(migrateJob).affinity).toEqual(values.migrate.affinity);

    const env = podOf(gateway).containers[0]!.env!;
    expect(env.filter((e) => e.name === 'STORAGE_TOKEN')).toEqual([
      { name: 'STORAGE_TOKEN', valueFrom: { secretKeyRef: { name: 'vault-storage', key: 'token' } } },
    ]);
    // env wins over the ConfigMap's LOG_LEVEL (envFrom) in Kubernetes.
    expect(env.find((e) => e.name === 'LOG_LEVEL')).toEqual({ name: 'LOG_LEVEL', value: 'debug' });
    expect(env.some((e) => e.name === 'DATABASE_URL')).toBe(true);
  });

  it('strategy and deploymentAnnotations reach the Deployments only', async () => {
    const objects = await rendered();
    for (const workload of workloads(objects)) {
      const spec = workload.spec as Workload['spec'] & { strategy?: unknown };
      const annotations = Object.keys(workload.metadata.annotations ?? {}).filter((k) =>
        k.startsWith('example.com/d-'),
      );
      if (workload.kind === 'Job') {
        expect(spec.strategy).toBeUndefined();
        expect(annotations).toEqual([]);
        continue;
      }
      const gateway = workload.metadata.name === 'uhp-uhp-files-gateway';
      expect(spec.strategy).toEqual(
        gateway ? { type: 'Recreate' } : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      );
      expect(annotations.sort()).toEqual(
        gateway ? ['example.com/d-gateway', 'example.com/d-top'] : ['example.com/d-top'],
      );
    }
  });

  it('keeps refusing typos: an unknown key anywhere, an EnvVar field, a Job strategy', async () => {
    for (const overrides of [
      { gateway: { extraEnvs: [] } },
      { extraEnv: [{ name: 'A', valu: 'b' }] },
      { storage: { podAnotations: {} } },
      { workers: { poolDefaults: { sidecar: [] } } },
      { workers: { pools: [{ name: 'x', queues: ['purge'], initContainer: [] }] } },
      { migrate: { strategy: { type: 'Recreate' } } },
      { strategy: { type: 'Rolling' } },
    ])
      expect(await renderFailure({ values: 'minimal', overrides })).toMatch(/Additional property|must be one of/);
  });

  it('without any of them, the pods are what they were: no extra entries, the generated spread constraints', async () => {
    const objects = await render({ values: 'minimal' });
    for (const workload of byKind(objects, 'Deployment') as Workload[]) {
      const pod = podOf(workload);
      expect(pod.initContainers).toBeUndefined();
      expect(pod.containers).toHaveLength(1);
      expect(pod.topologySpreadConstraints!.map((c) => c.topologyKey)).toEqual([
        'kubernetes.io/hostname',
        'topology.kubernetes.io/zone',
      ]);
    }
    expect(objects.every((object: K8sObject) => object.kind !== 'Job' || !('affinity' in podOf(object as Workload))));
  });
});
