import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HttpClient } from './http.client';

/** The retry, timeout and abort policy against a plain HTTP peer that drops the first requests it gets. */
describe('HttpClient', () => {
  let server: Server;
  let base: string;
  let seen = 0;
  /** How many of the next requests the peer drops without an answer. */
  let toDrop = 0;
  const http = new HttpClient({ headersMs: 300, idleMs: 300 });

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen += 1;
      if (toDrop > 0) {
        toDrop -= 1;
        req.socket.destroy();
        return;
      }
      if (req.url === '/silent') return;
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    seen = 0;
    toDrop = 0;
  });
  afterAll(() => {
    http.close();
    server.closeAllConnections();
    server.close();
  });

  it('sends an idempotent call again when the exchange is lost, a bounded number of times', async () => {
    toDrop = 2;
    const answer = await http.send({ method: 'GET', url: new URL('/k', base), idempotent: true });
    expect([answer.statusCode, await answer.body.text(), seen]).toEqual([200, 'ok', 3]);
    [seen, toDrop] = [0, 5];
    await expect(http.send({ method: 'GET', url: new URL('/k', base), idempotent: true })).rejects.toThrow();
    expect(seen).toBe(3);
  });

  it('never sends again a call that is not idempotent, nor a streamed body', async () => {
    toDrop = 1;
    await expect(http.send({ method: 'POST', url: new URL('/k', base), body: Buffer.from('{}') })).rejects.toThrow();
    toDrop = 1;
    const body = Readable.from([Buffer.from('bytes')]);
    await expect(http.send({ method: 'PUT', url: new URL('/k', base), body, idempotent: true })).rejects.toThrow();
    expect(seen).toBe(2);
  });

  it('gives up on a peer that does not answer within the headers limit, without retrying', async () => {
    await expect(http.send({ method: 'GET', url: new URL('/silent', base), idempotent: true })).rejects.toMatchObject({
      code: 'UND_ERR_HEADERS_TIMEOUT',
    });
    expect(seen).toBe(1);
  });

  it('rejects with the reason of the caller that aborted', async () => {
    const controller = new AbortController();
    const sent = http.send({ method: 'GET', url: new URL('/silent', base), signal: controller.signal });
    const reason = new Error('caller went away');
    setTimeout(() => controller.abort(reason), 20);
    await expect(sent).rejects.toBe(reason);
  });
});
