import { beforeAll, describe, expect, it } from 'vitest';
import { byKind, CI_VALUES, named, render, type K8sObject } from './support/helm';
import { deployments, plainValue, resolveEnv, serviceOf, workloads, type Workload } from './support/workloads';

/**
 * What the chart promises a platform team that installs it unchanged, asserted on the rendered objects of
 * every ci/ values file: pod and container hardening, requests and limits, probes, disruption budgets, a
 * grace period that covers the services' own drain, config checksums, topology spread, storage private,
 * an egress policy for the preview pool, and a migration hook that can run before anything else exists.
 */
const rendered: Record<string, K8sObject[]> = {};
beforeAll(async () => {
  for (const values of CI_VALUES) rendered[values] = await render({ values });
});

const containersOf = (workload: Workload) => [
  ...workload.spec.template.spec.containers,
  ...(workload.spec.template.spec.initContainers ?? []),
];

describe.each(CI_VALUES)('ci/%s-values.yaml', (values) => {
  const objects = () => rendered[values]!;

  it('every pod and container: non-root numeric uid, read-only root, no capabilities, RuntimeDefault seccomp', () => {
    for (const workload of workloads(objects())) {
      const pod = workload.spec.template.spec;
      const where = `${workload.kind}/${workload.metadata.name}`;
      expect(pod.securityContext?.runAsNonRoot, where).toBe(true);
      expect(pod.securityContext?.runAsUser, where).toBeTypeOf('number');
      expect(pod.securityContext?.runAsUser, where).toBeGreaterThan(0);
      expect(pod.securityContext?.seccompProfile?.type, where).toBe('RuntimeDefault');
      expect(pod.automountServiceAccountToken, where).toBe(false);
      for (const container of containersOf(workload)) {
        const security = container.securityContext!;
        expect(security.runAsNonRoot, where).toBe(true);
        expect(security.runAsUser, where).toBeGreaterThan(0);
        expect(security.readOnlyRootFilesystem, where).toBe(true);
        expect(security.allowPrivilegeEscalation, where).toBe(false);
        expect(security.privileged ?? false, where).toBe(false);
        expect(security.capabilities?.drop, where).toEqual(['ALL']);
        expect(security.capabilities?.add ?? [], where).toEqual([]);
        expect(security.seccompProfile?.type, where).toBe('RuntimeDefault');
        expect(
          container.resources?.requests?.cpu && container.resources.requests.memory,
          `${where} requests`,
        ).toBeTruthy();
        expect(container.resources?.limits?.cpu && container.resources.limits.memory, `${where} limits`).toBeTruthy();
        // The read-only root leaves /tmp as the only place to write: an emptyDir with a size limit.
        const tmp = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp');
        const volume = pod.volumes?.find((v) => v.name === tmp?.name);
        expect(volume?.emptyDir?.sizeLimit, `${where} /tmp`).toBeTruthy();
      }
    }
  });

  it('every Deployment: startup, liveness and readiness probes on /healthz and /readyz of its http port', () => {
    for (const deployment of deployments(objects())) {
      const [container] = deployment.spec.template.spec.containers;
      const where = deployment.metadata.name;
      expect(container!.ports?.map((port) => port.name).sort(), where).toEqual(['http', 'metrics']);
      expect(container!.startupProbe?.httpGet, where).toEqual({ path: '/healthz', port: 'http' });
      expect(container!.livenessProbe?.httpGet, where).toEqual({ path: '/healthz', port: 'http' });
      expect(container!.readinessProbe?.httpGet, where).toEqual({ path: '/readyz', port: 'http' });
    }
  });

  it('every Deployment: a grace period covering preStop pause + the service’s drain + its 5 s wind-down', () => {
    for (const deployment of deployments(objects())) {
      const [container] = deployment.spec.template.spec.containers;
      const env = resolveEnv(container!, objects());
      const drainMs = Math.max(
        Number(plainValue(env, 'SHUTDOWN_GRACE_MS') ?? 25_000),
        Number(plainValue(env, 'UHP_DRAIN_TIMEOUT_MS') ?? 0),
      );
      const preStop = container!.lifecycle?.preStop?.exec?.command;
      expect(preStop?.[0], deployment.metadata.name).toBe('sleep');
      const pause = Number(preStop![1]);
      expect(pause).toBeGreaterThan(0);
      expect(
        deployment.spec.template.spec.terminationGracePeriodSeconds,
        deployment.metadata.name,
      ).toBeGreaterThanOrEqual(pause + Math.ceil(drainMs / 1000) + 5);
    }
  });

  it('every Deployment: checksum annotations of its config and secret, and spread over nodes and zones', () => {
    for (const deployment of deployments(objects())) {
      const annotations = deployment.spec.template.metadata.annotations ?? {};
      expect(annotations['checksum/config'], deployment.metadata.name).toMatch(/^[a-f0-9]{64}$/);
      expect(annotations['checksum/secret'], deployment.metadata.name).toMatch(/^[a-f0-9]{64}$/);
      const spread = deployment.spec.template.spec.topologySpreadConstraints ?? [];
      expect(spread.map((constraint) => constraint.topologyKey).sort()).toEqual([
        'kubernetes.io/hostname',
        'topology.kubernetes.io/zone',
      ]);
      for (const constraint of spread)
        expect(constraint.labelSelector.matchLabels).toEqual(deployment.spec.selector!.matchLabels);
    }
  });

  it('every Deployment has a PodDisruptionBudget selecting exactly its pods', () => {
    const budgets = byKind(objects(), 'PodDisruptionBudget') as Array<
      K8sObject & { spec: { maxUnavailable?: number; selector: { matchLabels: Record<string, string> } } }
    >;
    for (const deployment of deployments(objects())) {
      const budget = budgets.find(
        (b) => JSON.stringify(b.spec.selector.matchLabels) === JSON.stringify(deployment.spec.selector!.matchLabels),
      );
      expect(budget, deployment.metadata.name).toBeDefined();
      expect(budget!.spec.maxUnavailable).toBeGreaterThanOrEqual(1);
    }
  });

  it('a changed config rolls the pods: the checksum follows the ConfigMap', async () => {
    if (values !== 'minimal') return;
    const changed = await render({ values, set: { logLevel: 'debug' } });
    const before = named<Workload>(objects(), 'Deployment', 'uhp-uhp-files-gateway');
    const after = named<Workload>(changed, 'Deployment', 'uhp-uhp-files-gateway');
    expect(after.spec.template.metadata.annotations!['checksum/config']).not.toBe(
      before.spec.template.metadata.annotations!['checksum/config'],
    );
  });

  it('the secret checksum comes from values: one value in every pod, the same in every render, and a changed secret value rolls the pods', async () => {
    if (values !== 'minimal') return;
    const checksums = (rendered: K8sObject[]) =>
      deployments(rendered).map((deployment) => deployment.spec.template.metadata.annotations!['checksum/secret']);
    const first = checksums(objects());
    expect(new Set(first).size).toBe(1);
    // The Secret's generated storage token differs between the two renders; the checksum must not.
    const again = await render({ values });
    expect(checksums(again)).toEqual(first);
    const changed = await render({ values, set: { apiKeys: 'ops=sk_live_changed_0123456789' } });
    expect(new Set(checksums(changed))).not.toContain(first[0]);
  });

  it('storage: ClusterIP only, never an Ingress backend, reachable only from gateway and worker pods (+ metrics)', () => {
    const service = named<K8sObject & { spec: { type: string } }>(objects(), 'Service', 'uhp-uhp-files-storage');
    expect(service.spec.type).toBe('ClusterIP');
    for (const ingress of byKind(objects(), 'Ingress'))
      expect(JSON.stringify(ingress)).not.toContain('uhp-uhp-files-storage');
    const policy = named<
      K8sObject & {
        spec: {
          podSelector: { matchLabels: Record<string, string> };
          policyTypes: string[];
          ingress: Array<{ from: Array<Record<string, unknown>>; ports: Array<{ port: string }> }>;
        };
      }
    >(objects(), 'NetworkPolicy', 'uhp-uhp-files-storage');
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.podSelector.matchLabels['app.kubernetes.io/component']).toBe('storage');
    const [api, metrics] = policy.spec.ingress;
    expect(api!.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(api!.from).toEqual([
      {
        podSelector: {
          matchLabels: { 'app.kubernetes.io/name': 'uhp-files', 'app.kubernetes.io/instance': 'uhp' },
          matchExpressions: [{ key: 'app.kubernetes.io/component', operator: 'In', values: ['gateway', 'worker'] }],
        },
      },
    ]);
    expect(metrics!.ports).toEqual([{ port: 'metrics', protocol: 'TCP' }]);
    expect(policy.spec.ingress).toHaveLength(2);
  });

  it('the preview pool (where there is one) has an egress policy: DNS, storage, Postgres and Redis ports only', () => {
    const preview = deployments(objects()).find((d) => d.metadata.name.endsWith('-worker-preview'));
    if (!preview) {
      expect(values).toBe('previews-off');
      return;
    }
    const env = resolveEnv(preview.spec.template.spec.containers[0]!, objects());
    expect(plainValue(env, 'PREVIEW_ENABLED')).toBe('true');
    const policy = named<
      K8sObject & {
        spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; egress: unknown[] };
      }
    >(objects(), 'NetworkPolicy', 'uhp-uhp-files-worker-preview-egress');
    expect(policy.spec.policyTypes).toEqual(['Egress']);
    expect(policy.spec.podSelector.matchLabels).toEqual(preview.spec.selector!.matchLabels);
    const ports = JSON.stringify(policy.spec.egress);
    for (const port of ['53', '8081', '5432', '6379']) expect(ports).toContain(`"port":${port}`);
    expect(ports).not.toMatch(/"port":(80|443)\b/);
  });

  it('the migrate Job is a pre-install,pre-upgrade hook whose Secret exists at hook time', () => {
    const job = named<Workload>(objects(), 'Job', 'uhp-uhp-files-migrate');
    expect(serviceOf(job)).toBe('migrate');
    const hook = job.metadata.annotations!;
    expect(hook['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    const env = resolveEnv(job.spec.template.spec.containers[0]!, objects());
    const source = env.DATABASE_URL as { secret: string; key: string };
    expect(Object.keys(env)).toEqual(['DATABASE_URL']);
    // Either the user's existing Secret (there before the release), or a hook Secret made before the Job.
    const secret = objects().find((o) => o.kind === 'Secret' && o.metadata.name === source.secret);
    if (secret) {
      expect(secret.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      expect(Number(secret.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(
        Number(hook['helm.sh/hook-weight'] ?? 0),
      );
    } else expect(source.secret).toBe('uhp-files-secrets');
    // No ServiceAccount of the release: it does not exist yet when pre-install hooks run.
    expect(job.spec.template.spec.serviceAccountName).toBeUndefined();
  });
});

describe('the preview pool under RuntimeDefault', () => {
  it('keeps the worker’s own converter isolation on (seccomp + Landlock work there) and its scratch space exec-able', () => {
    const objects = rendered.minimal!;
    const preview = named<Workload>(objects, 'Deployment', 'uhp-uhp-files-worker-preview');
    const env = resolveEnv(preview.spec.template.spec.containers[0]!, objects);
    expect(plainValue(env, 'PREVIEW_ISOLATE_NETWORK')).toBe('true');
    // Beneath the emptyDir's root (owned by root): the worker creates and chmods its work dir itself.
    expect(plainValue(env, 'PREVIEW_WORK_DIR')).toBe('/tmp/uhp-previews/work');
    const mount = preview.spec.template.spec.containers[0]!.volumeMounts!.find(
      (m) => m.mountPath === '/tmp/uhp-previews',
    );
    const volume = preview.spec.template.spec.volumes!.find((v) => v.name === mount?.name);
    expect(volume?.emptyDir?.sizeLimit).toBeTruthy();
    expect(volume?.emptyDir?.medium).toBeUndefined();
  });
});

describe('the Ingress', () => {
  it('carries ingress-nginx’s settings for multi-GB uploads: no body cap, streamed bodies, long timeouts', () => {
    const ingress = named(rendered.production!, 'Ingress', 'uhp-uhp-files-gateway');
    expect(ingress.metadata.annotations).toMatchObject({
      'nginx.ingress.kubernetes.io/proxy-body-size': '0',
      'nginx.ingress.kubernetes.io/proxy-request-buffering': 'off',
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '600',
      'nginx.ingress.kubernetes.io/proxy-send-timeout': '600',
    });
  });
});
