import { describe, expect, it } from 'vitest';
import { byKind, named, render, renderFailure } from './support/helm';
import type { Workload } from './support/workloads';

/**
 * ScaledObject (per pool), ServiceMonitor and HTTPRoute take true, false or "auto"; auto renders them when the
 * cluster serves the API, which `helm template` and Argo CD only know from --api-versions.
 */
const SCALED_OBJECT = 'keda.sh/v1alpha1/ScaledObject';
const SERVICE_MONITOR = 'monitoring.coreos.com/v1/ServiceMonitor';
/** The default pools, every other field from workers.poolDefaults. */
const pools = (poolDefaults: Record<string, unknown>) => ({
  workers: {
    pools: ['preview', 'archive', 'purge'].map((name) => ({ name, queues: [name] })),
    poolDefaults: { replicas: 2, ...poolDefaults },
  },
});
const autoEverything = { metrics: { serviceMonitor: { enabled: 'auto' } }, ...pools({ keda: { enabled: 'auto' } }) };

describe('optional APIs: true, false or auto', () => {
  it('auto renders a ScaledObject per pool and the ServiceMonitor only where the cluster serves them', async () => {
    const blind = await render({ values: 'minimal', overrides: autoEverything });
    expect(byKind(blind, 'ScaledObject')).toEqual([]);
    expect(byKind(blind, 'ServiceMonitor')).toEqual([]);
    // Without KEDA the pools keep their replicas.
    expect(named<Workload>(blind, 'Deployment', 'uhp-uhp-files-worker-preview').spec.replicas).toBe(2);

    const seeing = await render({
      values: 'minimal',
      overrides: autoEverything,
      apiVersions: [SCALED_OBJECT, SERVICE_MONITOR],
    });
    expect(byKind(seeing, 'ScaledObject').map((o) => o.metadata.name)).toEqual([
      'uhp-uhp-files-worker-preview',
      'uhp-uhp-files-worker-archive',
      'uhp-uhp-files-worker-purge',
    ]);
    expect(byKind(seeing, 'ServiceMonitor')).toHaveLength(1);
    // KEDA owns the replica count now.
    expect(named<Workload>(seeing, 'Deployment', 'uhp-uhp-files-worker-preview').spec.replicas).toBeUndefined();
  });

  it('true renders without the API, false never renders', async () => {
    const on = await render({
      values: 'minimal',
      overrides: {
        metrics: { serviceMonitor: { enabled: true } },
        ...pools({ keda: { enabled: true } }),
      },
    });
    expect(byKind(on, 'ScaledObject')).toHaveLength(3);
    expect(byKind(on, 'ServiceMonitor')).toHaveLength(1);
    const off = await render({ values: 'minimal', apiVersions: [SCALED_OBJECT, SERVICE_MONITOR] });
    expect(byKind(off, 'ScaledObject')).toEqual([]);
    expect(byKind(off, 'ServiceMonitor')).toEqual([]);
  });

  it('a pool with HPA and KEDA on auto is refused where KEDA exists; any other value is refused', async () => {
    const both = pools({ keda: { enabled: 'auto' }, hpa: { enabled: true } });
    expect(await renderFailure({ values: 'minimal', overrides: both, apiVersions: [SCALED_OBJECT] })).toMatch(
      /keda.enabled and hpa.enabled are both true/,
    );
    expect(
      await renderFailure({ values: 'minimal', overrides: { metrics: { serviceMonitor: { enabled: 'sometimes' } } } }),
    ).toMatch(/serviceMonitor/);
  });
});
