import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CHART, CI_VALUES, lint, render, ROOT } from './support/helm';
import { validateObject } from './support/schemas';

/**
 * The chart as chart-testing would take it: `helm lint --strict` and `helm template` over every values file
 * of its ci/ folder, with a real helm v3, and every rendered object checked against its kind's schema
 * (Kubernetes, KEDA, prometheus-operator).
 */
describe.each(CI_VALUES)('ci/%s-values.yaml', (values) => {
  it('passes helm lint --strict', async () => {
    expect(await lint({ values })).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders objects that each validate against their kind’s schema', async () => {
    const objects = await render({ values });
    expect(objects.length).toBeGreaterThan(10);
    for (const object of objects) {
      expect(() => validateObject(object)).not.toThrow();
      expect(object.metadata.name.length, `${object.kind}/${object.metadata.name}`).toBeLessThanOrEqual(63);
    }
  });
});

describe('the production values', () => {
  it('render the gateway behind an Ingress, storage, three pools (two scaled by KEDA), the hook and a ServiceMonitor', async () => {
    const objects = await render({ values: 'production' });
    const list = objects.map((object) => `${object.kind}/${object.metadata.name}`).sort();
    expect(list).toEqual(
      [
        'ConfigMap/uhp-uhp-files-gateway',
        'ConfigMap/uhp-uhp-files-storage',
        'ConfigMap/uhp-uhp-files-worker',
        'Deployment/uhp-uhp-files-gateway',
        'Deployment/uhp-uhp-files-storage',
        'Deployment/uhp-uhp-files-worker-archive',
        'Deployment/uhp-uhp-files-worker-preview',
        'Deployment/uhp-uhp-files-worker-purge',
        'HorizontalPodAutoscaler/uhp-uhp-files-gateway',
        'Ingress/uhp-uhp-files-gateway',
        'Job/uhp-uhp-files-migrate',
        'NetworkPolicy/uhp-uhp-files-storage',
        'NetworkPolicy/uhp-uhp-files-worker-preview-egress',
        'PodDisruptionBudget/uhp-uhp-files-gateway',
        'PodDisruptionBudget/uhp-uhp-files-storage',
        'PodDisruptionBudget/uhp-uhp-files-worker-archive',
        'PodDisruptionBudget/uhp-uhp-files-worker-preview',
        'PodDisruptionBudget/uhp-uhp-files-worker-purge',
        'ScaledObject/uhp-uhp-files-worker-archive',
        'ScaledObject/uhp-uhp-files-worker-preview',
        'Service/uhp-uhp-files-gateway',
        'Service/uhp-uhp-files-storage',
        'Service/uhp-uhp-files-worker',
        'ServiceAccount/uhp-uhp-files',
        'ServiceAccount/uhp-uhp-files-storage',
        'ServiceMonitor/uhp-uhp-files',
        'TriggerAuthentication/uhp-uhp-files-redis',
      ].sort(),
    );
    // The existing Secret is the user's: the chart makes none, not even for the hook.
    expect(objects.filter((object) => object.kind === 'Secret')).toEqual([]);
  });

  it('give every image the tag of the values (appVersion by default) and the registry', async () => {
    const chart = readFileSync(join(CHART, 'Chart.yaml'), 'utf8');
    const appVersion = /^appVersion:\s*"?([^"\n]+)"?/m.exec(chart)![1];
    const packageVersion = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
      .version;
    expect(appVersion, 'Chart.yaml appVersion = the application version = the image tag').toBe(packageVersion);
    const minimal = await render({ values: 'minimal' });
    const images = minimal.flatMap((o) =>
      o.kind === 'Deployment' || o.kind === 'Job'
        ? (
            o as unknown as { spec: { template: { spec: { containers: Array<{ image: string }> } } } }
          ).spec.template.spec.containers.map((c) => c.image)
        : [],
    );
    expect(new Set(images)).toEqual(
      new Set(['gateway', 'storage', 'worker', 'migrate'].map((c) => `uhp-files-${c}:${appVersion}`)),
    );
  });
});

describe('the chart README', () => {
  it('has the values table readme-generator makes from values.yaml (npm run chart:readme)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uhp-chart-readme-'));
    const copy = join(dir, 'README.md');
    copyFileSync(join(CHART, 'README.md'), copy);
    await promisify(execFile)(
      process.execPath,
      [
        join(ROOT, 'node_modules/@bitnami/readme-generator-for-helm/bin/index.js'),
        '-v',
        join(CHART, 'values.yaml'),
        '-r',
        copy,
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    expect(readFileSync(copy, 'utf8'), 'README.md is stale: run npm run chart:readme').toBe(
      readFileSync(join(CHART, 'README.md'), 'utf8'),
    );
  });
});

describe('the schema check itself', () => {
  it('refuses a broken object (so a pass means something)', async () => {
    const [deployment] = (await render({ values: 'minimal' })).filter((o) => o.kind === 'Deployment');
    const broken = structuredClone(deployment!) as unknown as { spec: { replicas: unknown } };
    broken.spec.replicas = 'two';
    expect(() => validateObject(broken as never)).toThrow(/replicas/);
    expect(() =>
      validateObject({
        apiVersion: 'keda.sh/v1alpha1',
        kind: 'ScaledObject',
        metadata: { name: 'x' },
        spec: {},
      } as never),
    ).toThrow(/scaleTargetRef/);
  });
});
