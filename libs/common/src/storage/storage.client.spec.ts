import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainRequest } from '../errors/drain';
import { StorageClient } from './storage.client';

/**
 * The storage service refuses a put before reading its body (an upload that is gone, a body over its cap) and
 * then reads at most 64 KiB more before it drops the connection: the client is still writing when the socket
 * is reset, and may take the reset before the answer's body. Here the reset always comes between the answer's
 * head and its body, the order that used to turn a 404 into service_unavailable now and then.
 */
describe('StorageClient: a refusal that arrives while the body is still being sent', () => {
  let server: Server;
  let client: StorageClient;

  beforeAll(async () => {
    server = createServer((req, res) => {
      // A block of an upload that is gone; an object over its cap.
      res.writeHead(req.url!.includes('/blocks/') ? 404 : 413, { 'content-type': 'application/json' });
      res.flushHeaders();
      drainRequest(req, { maxBytes: 64 * 1024, timeoutMs: 1_000 });
      req.socket.once('close', () => res.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    client = new StorageClient({ baseUrl: `http://127.0.0.1:${port}`, token: 'test' });
  });

  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  /** 32 MiB in 1 MiB chunks: far more than the socket buffers and the 64 KiB the server reads. */
  const bigBody = () => {
    const chunk = Buffer.alloc(1024 * 1024, 7);
    return Readable.from(
      (function* () {
        for (let i = 0; i < 32; i++) yield chunk;
      })(),
    );
  };

  it('answers the refusal, many puts at once, never service_unavailable', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 24 }, (_, i) =>
        i % 2 === 0
          ? client.putBlock('uploads/x', 'upload-1', 3, bigBody(), { maxBytes: 64 * 1024 * 1024 }).then(
              () => 'stored',
              (error: { code?: string }) => error.code,
            )
          : client.put('objects/over', bigBody(), { maxBytes: 1024 }).then(
              () => 'stored',
              (error: { code?: string }) => error.code,
            ),
      ),
    );
    const codes = results.map((result) => (result.status === 'fulfilled' ? result.value : 'rejected'));
    expect(codes.filter((_, i) => i % 2 === 0)).toEqual(Array(12).fill('not_found'));
    expect(codes.filter((_, i) => i % 2 === 1)).toEqual(Array(12).fill('file_too_large'));
  });
});

describe('StorageClient: a put cancelled by its caller while it streams', () => {
  let server: Server;
  let client: StorageClient;

  beforeAll(async () => {
    // Reads the body slowly and never answers: only the caller can end the exchange.
    server = createServer((req) => req.on('data', () => undefined));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    client = new StorageClient({ baseUrl: `http://127.0.0.1:${port}`, token: 'test' });
  });

  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('rejects with the signal’s reason, and the caller’s stream failing afterwards ends nothing else', async () => {
    const stop = new AbortController();
    const body = new Readable({ read() {} });
    body.push(Buffer.alloc(64 * 1024, 1));
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const put = client.put('objects/cancelled', body, { maxBytes: 1 << 30, signal: stop.signal });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const reason = new Error('the session changed during the build');
      // As the archive builder does: the signal aborts, then the ZIP stream it was writing fails.
      stop.abort(reason);
      body.destroy(new Error('the ZIP writer failed'));
      await expect(put).rejects.toBe(reason);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
