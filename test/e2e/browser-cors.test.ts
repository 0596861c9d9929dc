import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2E_BASE_URL, E2E_PORT_BASE, KEYS, testPort } from '../support/env';
import { Stack } from '../support/stack';

/**
 * A web page on another origin than the API, in a real Chromium: every request it makes goes through the
 * browser's own CORS checks (preflights included), which no Node client applies.
 */
const CHROMIUM = process.env.UHP_TEST_CHROMIUM ?? '/usr/bin/chromium';
const TUS_BROWSER_BUILD = resolve(__dirname, '../../node_modules/tus-js-client/dist/tus.min.js');
const MiB = 1024 * 1024;
const FOREIGN_ORIGIN = 'https://app.example.com';

/** A tiny site: an empty page that loads tus-js-client's browser build, on a port (so an origin) of its own. */
async function startSite(): Promise<{ server: Server; origin: string }> {
  const tus = readFileSync(TUS_BROWSER_BUILD);
  const server = createServer((req, res) => {
    if (req.url === '/tus.min.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(tus);
    else if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>uhp-files in a browser</title><script src="/tus.min.js"></script>');
    } else res.writeHead(404).end();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

interface BrowserRun {
  fileId: string | null;
  uploadUrl: string | null;
  sentSha256: string;
  listed: boolean;
  downloadedBytes: number;
  downloadedSha256: string;
  contentDisposition: string | null;
  etag: string | null;
  requestId: string | null;
}

/** In the page: makes a file of `bytes`, uploads it with tus-js-client, finds it in the list, downloads it. */
function uploadListDownload(page: Page, api: string, bytes: number): Promise<BrowserRun> {
  return page.evaluate(
    async ({ api, key, bytes }) => {
      const hex = async (data: ArrayBuffer | Uint8Array<ArrayBuffer>) =>
        [...new Uint8Array(await crypto.subtle.digest('SHA-256', data))]
          .map((byte) => byte.toString(16).padStart(2, '0'))
          .join('');
      const data = new Uint8Array(bytes);
      for (let at = 0; at < bytes; at += 65_536) crypto.getRandomValues(data.subarray(at, at + 65_536));
      const auth = { authorization: `Bearer ${key}` };
      const tus = (globalThis as unknown as { tus: typeof import('tus-js-client') }).tus;
      let fileId: string | null = null;
      const uploadUrl = await new Promise<string | null>((done, fail) => {
        const upload = new tus.Upload(new Blob([data]), {
          endpoint: `${api}/v1/tus`,
          headers: auth,
          chunkSize: 5 * 1024 * 1024,
          retryDelays: [],
          metadata: { filename: 'from-a-page.bin', content_type: 'application/octet-stream' },
          // The id of the file the upload became: readable only if the API exposes x-file-id.
          onAfterResponse: (_request, response) => {
            fileId = response.getHeader('x-file-id') ?? fileId;
          },
          onError: fail,
          onSuccess: () => done(upload.url),
        });
        upload.start();
      });
      const list = (await (await fetch(`${api}/v1/files?limit=1000`, { headers: auth })).json()) as {
        data: { id: string }[];
      };
      const content = await fetch(`${api}/v1/files/${fileId}/content`, { headers: auth });
      const body = await content.arrayBuffer();
      return {
        fileId,
        uploadUrl,
        sentSha256: await hex(data),
        listed: list.data.some((file) => file.id === fileId),
        downloadedBytes: body.byteLength,
        downloadedSha256: await hex(body),
        contentDisposition: content.headers.get('content-disposition'),
        etag: content.headers.get('etag'),
        requestId: content.headers.get('x-request-id'),
      };
    },
    { api, key: KEYS.alice, bytes },
  );
}

/** In the page: lists files, and says what the browser let the page see ('blocked' when CORS refused it). */
function listFrom(page: Page, api: string): Promise<number | 'blocked'> {
  return page.evaluate(
    async ({ api, key }) => {
      try {
        return (await fetch(`${api}/v1/files?limit=1`, { headers: { authorization: `Bearer ${key}` } })).status;
      } catch {
        return 'blocked' as const;
      }
    },
    { api, key: KEYS.alice },
  );
}

describe('a page on another origin, in Chromium', () => {
  let browser: Browser;
  const sites: Server[] = [];
  let site: string;
  let otherSite: string;
  // A second gateway on the same storage service, which lets only the first site and one other origin in.
  let listed: Stack;

  beforeAll(async () => {
    const first = await startSite();
    const second = await startSite();
    sites.push(first.server, second.server);
    site = first.origin;
    otherSite = second.origin;
    listed = new Stack(testPort(20180), {
      STORAGE_URL: `http://127.0.0.1:${E2E_PORT_BASE + 1}`,
      UHP_CORS_ORIGINS: `${FOREIGN_ORIGIN},${site}`,
    });
    await listed.start(['gateway']);
    // As root Chromium runs only without its own sandbox; the page is this test's own.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false });
  });
  afterAll(async () => {
    await browser?.close();
    await listed?.stop();
    for (const server of sites) server.close();
  });

  const openPage = async (origin: string) => {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    return page;
  };

  it('with *: uploads 20 MiB with tus-js-client, learns the file id, lists it and downloads it', async () => {
    const page = await openPage(site);
    const run = await uploadListDownload(page, E2E_BASE_URL, 20 * MiB);
    expect(run.uploadUrl).toMatch(new RegExp(`^${E2E_BASE_URL}/v1/tus/`));
    expect(run.fileId).toMatch(/^file_/);
    expect(run.listed).toBe(true);
    expect(run.downloadedBytes).toBe(20 * MiB);
    expect(run.downloadedSha256).toBe(run.sentSha256);
    expect(run.contentDisposition).toContain('from-a-page.bin');
    expect(run.etag).toBe(`"${run.sentSha256}"`);
    expect(run.requestId).toBeTruthy();
    await page.close();
  });

  it('with a list of origins, a listed page gets through and any other page is refused by the browser', async () => {
    const allowed = await openPage(site);
    expect(await listFrom(allowed, listed.baseUrl)).toBe(200);
    const run = await uploadListDownload(allowed, listed.baseUrl, MiB);
    expect(run.fileId).toMatch(/^file_/);
    expect(run.downloadedSha256).toBe(run.sentSha256);
    await allowed.close();

    const refused = await openPage(otherSite);
    expect(await listFrom(refused, listed.baseUrl)).toBe('blocked');
    // The same page may call the gateway that lets any origin in: the browser, not the page, drew the line.
    expect(await listFrom(refused, E2E_BASE_URL)).toBe(200);
    await refused.close();
  });

  describe('preflights as a browser sends them, on every public /v1 route family', () => {
    const ROUTES: [method: string, path: string][] = [
      ['POST', '/v1/files'],
      ['GET', '/v1/files/file_x/content'],
      ['DELETE', '/v1/files/file_x'],
      ['POST', '/v1/uploads/upload_x/parts'],
      ['POST', '/v1/tus'],
      ['PATCH', '/v1/tus/x'],
      ['HEAD', '/v1/tus/x'],
      ['GET', '/v1/containers/c/files/f/pdf'],
      ['GET', '/v1/sessions/s/files/archive'],
      ['POST', '/v1/responses'],
    ];
    const preflight = (base: string, [method, path]: [string, string], origin: string) =>
      fetch(`${base}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': method,
          'access-control-request-headers': 'authorization,content-type',
        },
      });

    it('UHP_CORS_ORIGINS=*: any origin, without a key, never with credentials', async () => {
      for (const route of ROUTES) {
        const answer = await preflight(E2E_BASE_URL, route, FOREIGN_ORIGIN);
        expect(answer.status, route.join(' ')).toBe(204);
        expect(answer.headers.get('access-control-allow-origin'), route.join(' ')).toBe('*');
        expect(answer.headers.get('access-control-allow-methods'), route.join(' ')).toContain(route[0]);
        expect(answer.headers.get('access-control-allow-headers'), route.join(' ')).toContain('Authorization');
        expect(answer.headers.get('access-control-allow-credentials'), route.join(' ')).toBeNull();
      }
    });

    it('a list: a listed origin is answered with itself and Vary: Origin; another gets no allowance', async () => {
      for (const route of ROUTES) {
        const allowed = await preflight(listed.baseUrl, route, FOREIGN_ORIGIN);
        expect(allowed.status, route.join(' ')).toBe(204);
        expect(allowed.headers.get('access-control-allow-origin'), route.join(' ')).toBe(FOREIGN_ORIGIN);
        expect(allowed.headers.get('vary'), route.join(' ')).toMatch(/\bOrigin\b/);
        expect(allowed.headers.get('access-control-allow-credentials'), route.join(' ')).toBeNull();
        const refused = await preflight(listed.baseUrl, route, 'https://evil.example.net');
        expect(refused.headers.get('access-control-allow-origin'), route.join(' ')).toBeNull();
        expect(refused.headers.get('vary'), route.join(' ')).toMatch(/\bOrigin\b/);
      }
      // tus discovery is the same OPTIONS: its capabilities come with the CORS answer, and without an Origin.
      const discoveries: Record<string, string>[] = [
        {},
        { origin: FOREIGN_ORIGIN, 'access-control-request-method': 'POST' },
      ];
      for (const headers of discoveries) {
        const discovery = await fetch(`${listed.baseUrl}/v1/tus`, { method: 'OPTIONS', headers });
        expect(discovery.status).toBe(204);
        expect(discovery.headers.get('tus-version')).toBe('1.0.0');
        expect(discovery.headers.get('tus-extension')).toContain('creation');
        expect(Number(discovery.headers.get('tus-max-size'))).toBeGreaterThan(0);
      }
    });

    it('answers a browser must read carry CORS too: a 401, and a 404 of a file that is not there', async () => {
      const unauthorised = await fetch(`${listed.baseUrl}/v1/files`, { headers: { origin: FOREIGN_ORIGIN } });
      expect(unauthorised.status).toBe(401);
      expect(unauthorised.headers.get('access-control-allow-origin')).toBe(FOREIGN_ORIGIN);
      const missing = await fetch(`${E2E_BASE_URL}/v1/files/file_none/content`, {
        headers: { origin: FOREIGN_ORIGIN, authorization: `Bearer ${KEYS.alice}` },
      });
      expect(missing.status).toBe(404);
      expect(missing.headers.get('access-control-allow-origin')).toBe('*');
      expect(missing.headers.get('access-control-expose-headers')).toContain('X-Request-Id');
    });
  });
});
