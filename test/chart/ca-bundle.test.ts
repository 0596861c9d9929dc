import { describe, expect, it } from 'vitest';
import { byKind, named, render, renderFailure, type K8sObject } from './support/helm';
import { validateObject } from './support/schemas';
import { workloads, type Workload } from './support/workloads';

/** tls.caBundle: a private CA mounted into every container of ours, NODE_EXTRA_CA_CERTS naming it. */
type Volume = { name: string; configMap?: { name: string; items: unknown[] }; secret?: { secretName: string } };
type TriggerAuthentication = K8sObject & {
  spec: {
    secretTargetRef?: Array<{ parameter: string; name: string; key: string }>;
    configMapTargetRef?: Array<{ parameter: string; name: string; key: string }>;
  };
};
const CA_FILE = '/etc/uhp-files/ca/ca.crt';
const kedaPools = {
  pools: [
    { name: 'preview', queues: ['preview'], keda: { enabled: true } },
    { name: 'rest', queues: ['archive', 'purge'] },
  ],
};

describe('tls.caBundle', () => {
  it('mounts the bundle read-only into every container of ours, the migrate Job and the schema wait included', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: {
        tls: { caBundle: { configMap: 'corp-ca', key: 'bundle.pem' } },
        migrate: { mode: 'job' },
        sidecars: [{ name: 'proxy', image: 'envoy' }],
      },
    });
    for (const object of objects) expect(() => validateObject(object)).not.toThrow();
    const owners = workloads(objects);
    expect(owners.map((o) => o.kind)).toContain('Job');
    for (const owner of owners) {
      const pod = owner.spec.template.spec;
      expect((pod.volumes as Volume[]).find((v) => v.name === 'ca-bundle')).toEqual({
        name: 'ca-bundle',
        configMap: { name: 'corp-ca', items: [{ key: 'bundle.pem', path: 'ca.crt' }] },
      });
      for (const container of [...pod.containers, ...(pod.initContainers ?? [])]) {
        const mine = container.name !== 'proxy';
        const mount = container.volumeMounts?.find((m) => m.name === 'ca-bundle');
        const env = container.env?.find((e) => e.name === 'NODE_EXTRA_CA_CERTS');
        expect(mount, `${owner.metadata.name}/${container.name}`).toEqual(
          mine ? { name: 'ca-bundle', mountPath: '/etc/uhp-files/ca', readOnly: true } : undefined,
        );
        expect(env, `${owner.metadata.name}/${container.name}`).toEqual(
          mine ? { name: 'NODE_EXTRA_CA_CERTS', value: CA_FILE } : undefined,
        );
      }
    }
  });

  it('takes a Secret instead; without a bundle nothing is mounted; not both at once', async () => {
    const objects = await render({ values: 'minimal', overrides: { tls: { caBundle: { secret: 'corp-ca' } } } });
    const gateway = named<Workload>(objects, 'Deployment', 'uhp-uhp-files-gateway');
    expect((gateway.spec.template.spec.volumes as Volume[]).find((v) => v.name === 'ca-bundle')).toEqual({
      name: 'ca-bundle',
      secret: { secretName: 'corp-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
    });
    for (const owner of workloads(await render({ values: 'minimal' })))
      expect(JSON.stringify(owner)).not.toMatch(/ca-bundle|NODE_EXTRA_CA_CERTS/);
    expect(
      await renderFailure({ values: 'minimal', overrides: { tls: { caBundle: { configMap: 'a', secret: 'b' } } } }),
    ).toMatch(/caBundle/);
  });

  it("KEDA's TriggerAuthentication carries the password, the Redis user and the CA (Secret: secretTargetRef)", async () => {
    const objects = await render({
      values: 'minimal',
      overrides: {
        redis: { tls: true, username: 'uhp-scaler' },
        tls: { caBundle: { secret: 'corp-ca', key: 'ca.pem' } },
        workers: kedaPools,
      },
    });
    for (const object of objects) expect(() => validateObject(object)).not.toThrow();
    const [auth] = byKind(objects, 'TriggerAuthentication') as TriggerAuthentication[];
    expect(auth!.spec.secretTargetRef).toEqual([
      { parameter: 'password', name: 'uhp-uhp-files', key: 'redis-password' },
      { parameter: 'username', name: 'uhp-uhp-files', key: 'redis-username' },
      { parameter: 'ca', name: 'corp-ca', key: 'ca.pem' },
    ]);
    expect(auth!.spec.configMapTargetRef).toBeUndefined();
    const secret = named<K8sObject & { data: Record<string, string> }>(objects, 'Secret', 'uhp-uhp-files');
    expect(Buffer.from(secret.data['redis-username']!, 'base64').toString()).toBe('uhp-scaler');
    const scaled = byKind(objects, 'ScaledObject')[0] as K8sObject & {
      spec: { triggers: Array<{ metadata: Record<string, string>; authenticationRef?: { name: string } }> };
    };
    for (const trigger of scaled.spec.triggers) {
      // TLS stays on in the trigger; KEDA refuses `tls` in both the trigger and the TriggerAuthentication.
      expect(trigger.metadata.enableTLS).toBe('true');
      expect(trigger.authenticationRef).toEqual({ name: auth!.metadata.name });
    }
  });

  it('a CA in a ConfigMap goes through configMapTargetRef (KEDA >= 2.13); a user alone still authenticates', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: {
        redis: { tls: true, auth: false, username: 'uhp' },
        tls: { caBundle: { configMap: 'corp-ca' } },
        workers: kedaPools,
      },
    });
    for (const object of objects) expect(() => validateObject(object)).not.toThrow();
    const [auth] = byKind(objects, 'TriggerAuthentication') as TriggerAuthentication[];
    expect(auth!.spec.secretTargetRef).toEqual([
      { parameter: 'username', name: 'uhp-uhp-files', key: 'redis-username' },
    ]);
    expect(auth!.spec.configMapTargetRef).toEqual([{ parameter: 'ca', name: 'corp-ca', key: 'ca.crt' }]);
    // Without TLS to Redis the CA is not the scaler's business; without auth, user or CA there is nothing to carry.
    const plain = await render({
      values: 'minimal',
      overrides: { redis: { auth: false }, tls: { caBundle: { configMap: 'corp-ca' } }, workers: kedaPools },
    });
    expect(byKind(plain, 'TriggerAuthentication')).toEqual([]);
  });
});
