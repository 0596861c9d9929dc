import { describe, expect, it } from 'vitest';
import { byKind, render, renderFailure, type K8sObject } from './support/helm';
import { validateObject } from './support/schemas';

type HttpRoute = K8sObject & {
  spec: {
    parentRefs: Array<{ name: string }>;
    hostnames?: string[];
    rules: Array<{ backendRefs: Array<{ name: string; port: number }>; timeouts?: Record<string, string> }>;
  };
};
type Service = K8sObject & { spec: { ports: Array<{ name: string; port: number }> } };

const HTTP_ROUTE_API = 'gateway.networking.k8s.io/v1/HTTPRoute';
const routeValues = (enabled: boolean | 'auto') => ({
  httpRoute: { enabled, parentRefs: [{ name: 'public', namespace: 'edge' }], hostnames: ['files.example.com'] },
});

describe('the Gateway API HTTPRoute, the alternative to the Ingress', () => {
  it("routes only to the gateway's API port: never storage, never a metrics port", async () => {
    const objects = await render({
      values: 'minimal',
      overrides: { ...routeValues(true), httpRoute: { ...routeValues(true).httpRoute, timeouts: { request: '0s' } } },
    });
    const [route] = byKind(objects, 'HTTPRoute') as HttpRoute[];
    // Against the Gateway API's published CRD schema: no Gateway controller runs here.
    expect(() => validateObject(route!)).not.toThrow();
    expect(route!.spec.parentRefs).toEqual([{ name: 'public', namespace: 'edge' }]);
    expect(route!.spec.hostnames).toEqual(['files.example.com']);
    const services = byKind(objects, 'Service') as Service[];
    const gateway = services.find((service) => service.metadata.name === 'uhp-uhp-files-gateway')!;
    const apiPort = gateway.spec.ports.find((port) => port.name === 'http')!.port;
    for (const rule of route!.spec.rules) {
      expect(rule.backendRefs).toEqual([{ name: 'uhp-uhp-files-gateway', port: apiPort }]);
      expect(rule.timeouts).toEqual({ request: '0s' });
    }
  });

  it('auto renders it only when the cluster serves the API (helm template needs --api-versions)', async () => {
    expect(byKind(await render({ values: 'minimal', overrides: routeValues('auto') }), 'HTTPRoute')).toEqual([]);
    const seen = await render({ values: 'minimal', overrides: routeValues('auto'), apiVersions: [HTTP_ROUTE_API] });
    expect(byKind(seen, 'HTTPRoute')).toHaveLength(1);
    expect(byKind(await render({ values: 'minimal' }), 'HTTPRoute')).toEqual([]);
  });

  it('refuses a route with no Gateway to attach to, and a key it does not know', async () => {
    expect(await renderFailure({ values: 'minimal', overrides: { httpRoute: { enabled: true } } })).toMatch(
      /httpRoute.parentRefs is required/,
    );
    expect(
      await renderFailure({ values: 'minimal', overrides: { httpRoute: { enabled: true, hostname: 'x' } } }),
    ).toMatch(/hostname/);
  });
});
