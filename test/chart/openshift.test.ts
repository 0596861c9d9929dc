import { describe, expect, it } from 'vitest';
import { byKind, render, type K8sObject } from './support/helm';
import { workloads } from './support/workloads';

/** global.compatibility.openshift.adaptSecurityContext: what the restricted SCC needs, nothing else changed. */
const OPENSHIFT_API = 'security.openshift.io/v1';
type Policy = K8sObject & { spec: { egress?: Array<{ ports?: Array<{ port: number; protocol: string }> }> } };
const IDS = /"(runAsUser|runAsGroup|fsGroup)"/;
const mode = (adaptSecurityContext: string) => ({
  global: { compatibility: { openshift: { adaptSecurityContext } } },
  gateway: { networkPolicy: { enabled: true } },
});
const dnsPorts = (objects: K8sObject[]) =>
  (byKind(objects, 'NetworkPolicy') as Policy[])
    .filter((policy) => policy.spec.egress)
    .map((policy) => policy.spec.egress![0]!.ports!.map((p) => `${p.port}/${p.protocol}`));

describe('OpenShift (restricted SCC)', () => {
  it('auto adapts on a cluster that serves security.openshift.io/v1: no uid, gid or fsGroup; DNS on 5353 too', async () => {
    const objects = await render({ values: 'production', overrides: mode('auto'), apiVersions: [OPENSHIFT_API] });
    const owners = workloads(objects);
    expect(owners.length).toBeGreaterThan(3);
    for (const owner of owners) {
      expect(JSON.stringify(owner.spec.template.spec), owner.metadata.name).not.toMatch(IDS);
      // The rest of the hardening stays.
      expect(owner.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true });
      expect(owner.spec.template.spec.containers[0]!.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
    }
    const ports = dnsPorts(objects);
    expect(ports.length).toBeGreaterThanOrEqual(2);
    for (const rule of ports) expect(rule).toEqual(['53/UDP', '53/TCP', '5353/UDP', '5353/TCP']);
  });

  it('force adapts without the API; auto without it and disabled with it keep the fixed ids and port 53 only', async () => {
    const forced = await render({ values: 'production', overrides: mode('force') });
    for (const owner of workloads(forced)) expect(JSON.stringify(owner.spec.template.spec)).not.toMatch(IDS);
    for (const objects of [
      await render({ values: 'production', overrides: mode('auto') }),
      await render({ values: 'production', overrides: mode('disabled'), apiVersions: [OPENSHIFT_API] }),
    ]) {
      for (const owner of workloads(objects))
        expect(owner.spec.template.spec.securityContext).toMatchObject({ runAsUser: 1000, fsGroup: 1000 });
      for (const rule of dnsPorts(objects)) expect(rule).toEqual(['53/UDP', '53/TCP']);
    }
  });
});
