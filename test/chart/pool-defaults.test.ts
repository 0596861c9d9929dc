import { describe, expect, it } from 'vitest';
import { byKind, named, render, renderFailure, type K8sObject } from './support/helm';
import { resolveEnv, type Workload } from './support/workloads';

/** workers.pools entries that name only what differs from workers.poolDefaults. */
describe('worker pools complete themselves from workers.poolDefaults', () => {
  const pools = [
    { name: 'bulk', queues: ['archive', 'purge'], egress: false },
    {
      name: 'fast',
      queues: ['preview'],
      concurrency: 3,
      env: { PREVIEW_CONVERSION_TIMEOUT_MS: '30000' },
      keda: { enabled: true, maxReplicas: 9 },
      resources: { limits: { cpu: '3', memory: '6Gi' } },
    },
  ];
  const poolDefaults = {
    replicas: 2,
    concurrency: 2,
    egress: true,
    env: { LOG_LEVEL: 'debug' },
    keda: {
      enabled: false,
      minReplicas: 1,
      maxReplicas: 4,
      jobsPerReplica: 5,
      pollingInterval: 10,
      cooldownPeriod: 60,
    },
  };
  const rendered = () => render({ values: 'minimal', overrides: { workers: { pools, poolDefaults } } });

  it('a pool of name and queues takes every other field from the defaults; its false wins over a default true', async () => {
    const objects = await rendered();
    const bulk = named<Workload>(objects, 'Deployment', 'uhp-uhp-files-worker-bulk');
    expect(bulk.spec.replicas).toBe(2);
    const env = resolveEnv(bulk.spec.template.spec.containers[0]!, objects);
    expect(env.ARCHIVE_CONCURRENCY).toEqual({ value: '2' });
    expect(env.PURGE_CONCURRENCY).toEqual({ value: '2' });
    expect(env.LOG_LEVEL).toEqual({ value: 'debug' });
    expect(bulk.spec.template.spec.containers[0]!.resources).toEqual({
      requests: { cpu: '250m', memory: '256Mi' },
      limits: { cpu: '1', memory: '1Gi' },
    });
    const policies = byKind(objects, 'NetworkPolicy').map((policy) => policy.metadata.name);
    expect(policies).not.toContain('uhp-uhp-files-worker-bulk-egress');
  });

  it('a field the pool sets wins; resources, env and keda merge key by key', async () => {
    const objects = await rendered();
    const fast = named<Workload>(objects, 'Deployment', 'uhp-uhp-files-worker-fast');
    const env = resolveEnv(fast.spec.template.spec.containers[0]!, objects);
    expect(env.PREVIEW_CONCURRENCY).toEqual({ value: '3' });
    expect(env.LOG_LEVEL).toEqual({ value: 'debug' });
    expect(env.PREVIEW_CONVERSION_TIMEOUT_MS).toEqual({ value: '30000' });
    expect(fast.spec.template.spec.containers[0]!.resources).toEqual({
      requests: { cpu: '250m', memory: '256Mi' },
      limits: { cpu: '3', memory: '6Gi' },
    });
    expect(byKind(objects, 'NetworkPolicy').map((policy) => policy.metadata.name)).toContain(
      'uhp-uhp-files-worker-fast-egress',
    );
    const scaler = named<K8sObject & { spec: { maxReplicaCount: number; pollingInterval: number } }>(
      objects,
      'ScaledObject',
      'uhp-uhp-files-worker-fast',
    );
    expect(scaler.spec.maxReplicaCount).toBe(9);
    expect(scaler.spec.pollingInterval).toBe(10);
  });

  it('the schema still refuses a field it does not know, in a pool and in the defaults', async () => {
    expect(
      await renderFailure({
        values: 'minimal',
        overrides: { workers: { pools: [{ name: 'x', queues: ['purge'], replica: 1 }] } },
      }),
    ).toMatch(/replica/);
    expect(
      await renderFailure({ values: 'minimal', overrides: { workers: { poolDefaults: { concurency: 1 } } } }),
    ).toMatch(/concurency/);
  });
});
