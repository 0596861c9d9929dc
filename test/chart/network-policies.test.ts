import { describe, expect, it } from 'vitest';
import { named, render, type K8sObject } from './support/helm';
import { validateObject } from './support/schemas';

/** The gateway's NetworkPolicy, and egress peers narrowed where the chart knows where a backend is. */
type Rule = { to?: unknown[]; from?: unknown[]; ports?: Array<{ port: number | string; protocol: string }> };
type Policy = K8sObject & { spec: { policyTypes: string[]; ingress?: Rule[]; egress?: Rule[] } };
const GATEWAY_POLICY = 'uhp-uhp-files-gateway';
const ruleFor = (rules: Rule[], port: number) => rules.find((rule) => rule.ports?.some((p) => p.port === port));

describe('NetworkPolicies', () => {
  it('the gateway: API port from the configured peer, metrics from the scraper; egress only to what it calls', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: {
        database: { url: 'postgresql://uhp:pw@10.20.30.40:6432/uhp' },
        redis: { host: 'redis-master.data.svc.cluster.local' },
        s3: { endpoint: 'https://s3.eu-west-1.amazonaws.com' },
        agent: { httpUrl: 'http://agent:9000/run' },
        gateway: {
          networkPolicy: {
            enabled: true,
            ingressFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }],
            extraEgress: [{ to: [{ ipBlock: { cidr: '10.9.0.0/16' } }], ports: [{ port: 4317, protocol: 'TCP' }] }],
          },
        },
      },
    });
    const policy = named<Policy>(objects, 'NetworkPolicy', GATEWAY_POLICY);
    expect(() => validateObject(policy)).not.toThrow();
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.ingress).toEqual([
      {
        ports: [{ port: 'http', protocol: 'TCP' }],
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }],
      },
      { from: [{ namespaceSelector: {} }], ports: [{ port: 'metrics', protocol: 'TCP' }] },
    ]);
    const egress = policy.spec.egress!;
    expect(egress[0]).toEqual({
      ports: [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ],
    });
    expect(ruleFor(egress, 8081)!.to).toEqual([
      { podSelector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/component': 'storage' }) } },
    ]);
    // An address: that address. A Service name: its namespace. A bare name: this namespace. A public name: any.
    expect(ruleFor(egress, 6432)!.to).toEqual([{ ipBlock: { cidr: '10.20.30.40/32' } }]);
    expect(ruleFor(egress, 6379)!.to).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'data' } } },
    ]);
    expect(ruleFor(egress, 9000)!.to).toEqual([{ podSelector: {} }]);
    expect(ruleFor(egress, 443)!.to).toBeUndefined();
    expect(ruleFor(egress, 4317)!.to).toEqual([{ ipBlock: { cidr: '10.9.0.0/16' } }]);
    expect(egress.flatMap((rule) => rule.ports!.map((p) => p.port)).sort()).toEqual(
      [53, 53, 8081, 6432, 6379, 443, 9000, 4317].sort(),
    );
  });

  it('no S3 rule without direct reads, no agent rule without an agent; off by default', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: { gateway: { directReads: false, networkPolicy: { enabled: true } } },
    });
    const egress = named<Policy>(objects, 'NetworkPolicy', GATEWAY_POLICY).spec.egress!;
    expect(ruleFor(egress, 443)).toBeUndefined();
    expect(
      (await render({ values: 'minimal' })).some(
        (o) => o.metadata.name === GATEWAY_POLICY && o.kind === 'NetworkPolicy',
      ),
    ).toBe(false);
  });

  it("a pool's egress: Postgres and Redis narrowed like the gateway's; with existingSecret Postgres is port 5432 anywhere", async () => {
    const narrowed = await render({
      values: 'minimal',
      overrides: { database: { url: 'postgresql://u:p@pg.data.svc:5432/uhp' }, redis: { host: '10.0.0.7' } },
    });
    const egress = named<Policy>(narrowed, 'NetworkPolicy', 'uhp-uhp-files-worker-preview-egress').spec.egress!;
    expect(ruleFor(egress, 5432)!.to).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'data' } } },
    ]);
    expect(ruleFor(egress, 6379)!.to).toEqual([{ ipBlock: { cidr: '10.0.0.7/32' } }]);

    const external = await render({ values: 'production' });
    const rules = named<Policy>(external, 'NetworkPolicy', 'uhp-uhp-files-worker-preview-egress').spec.egress!;
    expect(ruleFor(rules, 5432)).toEqual({ ports: [{ port: 5432, protocol: 'TCP' }] });
    // Extra ports and rules still add up.
    const extra = await render({
      values: 'minimal',
      overrides: {
        workers: {
          egress: {
            allowedPorts: [8200],
            extraTo: [{ ipBlock: { cidr: '10.1.0.0/16' } }],
            extraEgress: [{ ports: [{ port: 4317 }] }],
          },
        },
      },
    });
    const more = named<Policy>(extra, 'NetworkPolicy', 'uhp-uhp-files-worker-preview-egress').spec.egress!;
    expect(ruleFor(more, 8200)!.to).toEqual([{ ipBlock: { cidr: '10.1.0.0/16' } }]);
    expect(more.at(-1)).toEqual({ ports: [{ port: 4317 }] });
  });
});
