import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CorsOrigins, type GatewayConfig } from '@app/common';
import { afterEach, describe, expect, it } from 'vitest';
import { CORS_EXPOSED_HEADERS, CorsMiddleware } from './cors.middleware';

const APP = 'https://app.example.com';
const OTHER = 'https://evil.example.net';

/** A server whose every request goes through the middleware, then a stand-in for the key check (401). */
async function serverWith(origins: CorsOrigins): Promise<{ url: string; reachedKeyCheck: () => number }> {
  const middleware = new CorsMiddleware({ UHP_CORS_ORIGINS: origins } as GatewayConfig);
  let reached = 0;
  const server = createServer((req, res) =>
    middleware.use(req, res, () => {
      reached += 1;
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"invalid_api_key"}}');
    }),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1/files`, reachedKeyCheck: () => reached };
}

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

const preflight = (url: string, origin: string) =>
  fetch(url, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'PATCH',
      'access-control-request-headers': 'authorization,tus-resumable,upload-offset,content-type',
    },
  });

const exposed = (res: Response) =>
  (res.headers.get('access-control-expose-headers') ?? '').split(',').map((name) => name.trim().toLowerCase());

describe('CORS of the public API', () => {
  it('with *: any origin; a preflight is 204 before the key check; what a client reads is exposed', async () => {
    const server = await serverWith('*');
    const answer = await preflight(server.url, OTHER);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(answer.headers.get('access-control-allow-methods')).toBe('GET,HEAD,POST,PATCH,DELETE,OPTIONS');
    const allowed = (answer.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(',');
    expect(allowed).toEqual(
      expect.arrayContaining(['authorization', 'tus-resumable', 'upload-offset', 'content-type']),
    );
    expect(answer.headers.get('access-control-max-age')).toBe('86400');
    expect(answer.headers.get('access-control-allow-credentials')).toBeNull();
    expect(answer.headers.get('vary')).toBeNull();
    expect(server.reachedKeyCheck()).toBe(0);

    const refused = await fetch(server.url, { headers: { origin: OTHER } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    expect(refused.headers.get('access-control-allow-credentials')).toBeNull();
    expect(exposed(refused)).toEqual(
      expect.arrayContaining([
        'location',
        'upload-offset',
        'upload-length',
        'tus-resumable',
        'tus-version',
        'tus-extension',
        'tus-max-size',
        'x-file-id',
        'content-disposition',
        'etag',
        'x-request-id',
        'retry-after',
        'x-should-retry',
      ]),
    );
    expect(exposed(refused)).toHaveLength(CORS_EXPOSED_HEADERS.length);
  });

  it('with a list: a listed origin is answered with itself and Vary: Origin', async () => {
    const server = await serverWith([APP, 'http://127.0.0.1:3000']);
    const answer = await preflight(server.url, APP);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    expect(answer.headers.get('vary')).toMatch(/\bOrigin\b/);
    expect(answer.headers.get('access-control-allow-credentials')).toBeNull();

    const refused = await fetch(server.url, { headers: { origin: APP } });
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP);
    expect(refused.headers.get('vary')).toMatch(/\bOrigin\b/);
    expect(exposed(refused)).toContain('x-file-id');
  });

  it('with a list: another origin gets no Access-Control-Allow-Origin, so the browser refuses', async () => {
    const server = await serverWith([APP]);
    for (const origin of [OTHER, `${APP}.evil.example.net`, 'http://app.example.com', 'null']) {
      const answer = await preflight(server.url, origin);
      expect(answer.status, origin).toBe(204);
      expect(answer.headers.get('access-control-allow-origin'), origin).toBeNull();
      expect(answer.headers.get('vary'), origin).toMatch(/\bOrigin\b/);
      const refused = await fetch(server.url, { headers: { origin } });
      expect(refused.status, origin).toBe(401);
      expect(refused.headers.get('access-control-allow-origin'), origin).toBeNull();
    }
    // A request with no Origin (curl, a server) is not a browser's: it is served as always.
    const plain = await fetch(server.url);
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
    expect(plain.headers.get('vary')).toMatch(/\bOrigin\b/);
    expect(server.reachedKeyCheck()).toBe(5);
  });
});
