import { describe, expect, it } from 'vitest';
import { byKind, named, render, type K8sObject } from './support/helm';
import { validateObject } from './support/schemas';
import { deployments, resolveEnv, serviceOf, workloads, type ResolvedEnv, type Workload } from './support/workloads';

/**
 * database.directUrl: with DATABASE_URL through PgBouncer in transaction pooling mode, migrations (and their wait)
 * connect directly, since the runner holds a session-level advisory lock; gateway and storage get
 * DATABASE_DIRECT_URL for the CLIs run with `kubectl exec` (keys, doctor).
 */
const POOLED = 'postgresql://uhp:pw@pgbouncer.db.svc:6432/uhp';
const DIRECT = 'postgresql://uhp:pw@postgres.db.svc.cluster.local:5432/uhp';
const viaPgBouncer = { database: { url: POOLED, directUrl: DIRECT } };

type Rule = { to?: unknown[]; ports?: Array<{ port: number | string }> };
type Policy = K8sObject & { spec: { egress: Rule[] } };
const jobsOf = (objects: K8sObject[]) => byKind(objects, 'Job') as Workload[];
const envOf = (workload: Workload, objects: K8sObject[]): ResolvedEnv =>
  resolveEnv(workload.spec.template.spec.containers[0]!, objects);
const secretData = (objects: K8sObject[], name: string) =>
  Object.fromEntries(
    Object.entries(named<K8sObject & { data: Record<string, string> }>(objects, 'Secret', name).data).map(
      ([key, value]) => [key, Buffer.from(value, 'base64').toString()],
    ),
  );
const checksum = (objects: K8sObject[]) =>
  named<Workload>(objects, 'Deployment', 'uhp-uhp-files-gateway').spec.template.metadata.annotations![
    'checksum/secret'
  ];

describe('database.directUrl', () => {
  it('the hook Job migrates over the direct URL, from a hook Secret holding only that URL', async () => {
    const objects = await render({ values: 'minimal', overrides: viaPgBouncer });
    for (const object of objects) expect(() => validateObject(object)).not.toThrow();
    expect(secretData(objects, 'uhp-uhp-files-migrate')).toEqual({ 'database-direct-url': DIRECT });
    const [job] = jobsOf(objects);
    // The runner reads DATABASE_URL alone: there, it is the direct URL.
    expect(envOf(job!, objects)).toEqual({
      DATABASE_URL: { secret: 'uhp-uhp-files-migrate', key: 'database-direct-url' },
    });
    expect(secretData(objects, 'uhp-uhp-files')).toMatchObject({
      'database-url': POOLED,
      'database-direct-url': DIRECT,
    });
  });

  it('in migrate.mode job, the Job and every wait-for-schema read the direct URL from the release Secret', async () => {
    const objects = await render({ values: 'minimal', overrides: { ...viaPgBouncer, migrate: { mode: 'job' } } });
    const direct = { secret: 'uhp-uhp-files', key: 'database-direct-url' };
    expect(envOf(jobsOf(objects)[0]!, objects)).toEqual({ DATABASE_URL: direct });
    for (const deployment of deployments(objects)) {
      const [wait] = deployment.spec.template.spec.initContainers!;
      expect(wait!.name).toBe('wait-for-schema');
      expect(resolveEnv(wait!, objects).DATABASE_URL, deployment.metadata.name).toEqual(direct);
    }
  });

  it('every service gets DATABASE_DIRECT_URL: its presence says DATABASE_URL is a transaction pooler', async () => {
    const objects = await render({ values: 'minimal', overrides: viaPgBouncer });
    for (const deployment of deployments(objects)) {
      const env = envOf(deployment, objects);
      expect(env.DATABASE_URL, deployment.metadata.name).toEqual({ secret: 'uhp-uhp-files', key: 'database-url' });
      expect(env.DATABASE_DIRECT_URL, deployment.metadata.name).toEqual({
        secret: 'uhp-uhp-files',
        key: 'database-direct-url',
      });
    }
  });

  it("every pod's egress reaches both PgBouncer and Postgres: its schema wait connects directly", async () => {
    const objects = await render({
      values: 'minimal',
      overrides: { ...viaPgBouncer, gateway: { networkPolicy: { enabled: true } } },
    });
    const portsOf = (name: string) =>
      named<Policy>(objects, 'NetworkPolicy', name).spec.egress.flatMap((rule) => rule.ports!.map((p) => p.port));
    const namespaced = (port: number) => ({
      ports: [{ port, protocol: 'TCP' }],
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'db' } } }],
    });
    const gateway = named<Policy>(objects, 'NetworkPolicy', 'uhp-uhp-files-gateway').spec.egress;
    expect(gateway).toContainEqual(namespaced(6432));
    expect(gateway).toContainEqual(namespaced(5432));
    expect(portsOf('uhp-uhp-files-worker-preview-egress')).toEqual(expect.arrayContaining([6432, 5432]));
  });

  it('with existingSecret, database.hasDirectUrl reads the direct URL from the key secretKeys.databaseDirectUrl', async () => {
    const objects = await render({
      values: 'production',
      overrides: { database: { hasDirectUrl: true }, secretKeys: { databaseDirectUrl: 'DATABASE_DIRECT_URL' } },
    });
    const direct = { secret: 'uhp-files-secrets', key: 'DATABASE_DIRECT_URL' };
    expect(byKind(objects, 'Secret')).toEqual([]);
    expect(envOf(jobsOf(objects)[0]!, objects)).toEqual({ DATABASE_URL: direct });
    for (const workload of workloads(objects).filter((w) => ['gateway', 'storage'].includes(serviceOf(w))))
      expect(envOf(workload, objects).DATABASE_DIRECT_URL, workload.metadata.name).toEqual(direct);
  });

  it('rolls the pods when the direct URL changes; an unused key name does not', async () => {
    const base = checksum(await render({ values: 'minimal' }));
    expect(checksum(await render({ values: 'minimal', set: { 'secretKeys.databaseDirectUrl': 'other' } }))).toBe(base);
    const direct = checksum(await render({ values: 'minimal', overrides: viaPgBouncer }));
    expect(direct).not.toBe(base);
    const moved = { database: { ...viaPgBouncer.database, directUrl: DIRECT.replace('5432', '5433') } };
    expect(checksum(await render({ values: 'minimal', overrides: moved }))).not.toBe(direct);
  });

  it('without a direct URL nothing changes: no DATABASE_DIRECT_URL, migrations over DATABASE_URL', async () => {
    const objects = await render({ values: 'minimal' });
    for (const workload of workloads(objects)) expect(envOf(workload, objects).DATABASE_DIRECT_URL).toBeUndefined();
    expect(envOf(jobsOf(objects)[0]!, objects).DATABASE_URL).toEqual({
      secret: 'uhp-uhp-files-migrate',
      key: 'database-url',
    });
  });
});
