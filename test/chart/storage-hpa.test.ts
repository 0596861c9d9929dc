import { describe, expect, it } from 'vitest';
import { byKind, named, render, type K8sObject } from './support/helm';
import type { Workload } from './support/workloads';

type Hpa = K8sObject & {
  spec: {
    scaleTargetRef: { kind: string; name: string };
    minReplicas: number;
    maxReplicas: number;
    metrics: Array<{ resource: { name: string; target: { averageUtilization: number } } }>;
  };
};

describe('storage scales on CPU like the gateway', () => {
  it('storage.hpa.enabled renders a CPU HPA of the storage Deployment, which then leaves replicas to it', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: {
        storage: { hpa: { enabled: true, minReplicas: 3, maxReplicas: 8, targetCPUUtilizationPercentage: 60 } },
      },
    });
    const hpa = named<Hpa>(objects, 'HorizontalPodAutoscaler', 'uhp-uhp-files-storage');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'uhp-uhp-files-storage' });
    expect([hpa.spec.minReplicas, hpa.spec.maxReplicas]).toEqual([3, 8]);
    expect(hpa.spec.metrics[0]!.resource).toMatchObject({ name: 'cpu', target: { averageUtilization: 60 } });
    expect(named<Workload>(objects, 'Deployment', 'uhp-uhp-files-storage').spec.replicas).toBeUndefined();
  });

  it('off by default: a fixed replica count and no HPA', async () => {
    const objects = await render({ values: 'minimal' });
    expect(byKind(objects, 'HorizontalPodAutoscaler').map((hpa) => hpa.metadata.name)).not.toContain(
      'uhp-uhp-files-storage',
    );
    expect(named<Workload>(objects, 'Deployment', 'uhp-uhp-files-storage').spec.replicas).toBe(2);
  });

  it('the bootstrap API keys are optional in the Secret: an existing Secret need not hold them', async () => {
    const objects = await render({ values: 'minimal' });
    const gateway = named<Workload>(objects, 'Deployment', 'uhp-uhp-files-gateway');
    const env = gateway.spec.template.spec.containers[0]!.env as Array<{
      name: string;
      valueFrom?: { secretKeyRef?: { optional?: boolean } };
    }>;
    expect(env.find((variable) => variable.name === 'UHP_API_KEYS')!.valueFrom!.secretKeyRef!.optional).toBe(true);
    expect(env.find((variable) => variable.name === 'DATABASE_URL')!.valueFrom!.secretKeyRef!.optional).toBeUndefined();
  });
});
