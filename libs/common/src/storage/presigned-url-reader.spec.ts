import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PresignedUrlReader, type S3ReadFailure } from './presigned-url-reader';

/**
 * The reader's own logic (what it sends, how it maps each kind of answer, what it logs) against a plain
 * HTTP peer; its reads from the real S3 server are in test/integration/storage-service.test.ts.
 */
describe('PresignedUrlReader', () => {
  const body = Buffer.from('0123456789abcdefghij');
  let server: Server;
  let base: string;
  let seen: IncomingMessage[] = [];
  let failures: S3ReadFailure[] = [];
  const newReader = () =>
    new PresignedUrlReader({ idleTimeoutMs: 300, onFailure: (failure) => failures.push(failure) });
  let reader = newReader();

  const answer = (req: IncomingMessage, res: ServerResponse) => {
    seen.push(req);
    const path = req.url!.split('?')[0];
    if (path === '/bucket/missing') return res.writeHead(404).end('<Error><Code>NoSuchKey</Code></Error>');
    if (path === '/bucket/denied')
      return res
        .writeHead(403)
        .end('<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>');
    if (path === '/bucket/silent') return; // never answers
    if (path === '/bucket/ignores-range') return res.writeHead(200, { 'content-length': body.length }).end(body);
    if (path === '/bucket/stalls') {
      res.writeHead(200, { 'content-length': body.length });
      res.write(body.subarray(0, 5)); // and nothing more
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!range) return res.writeHead(200, { 'content-length': body.length }).end(body);
    const [start, end] = [Number(range[1]), Number(range[2])];
    res
      .writeHead(206, { 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${body.length}` })
      .end(body.subarray(start, end + 1));
  };

  const read = async (stream: NodeJS.ReadableStream) => {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  beforeAll(async () => {
    server = createServer(answer);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    seen = [];
    failures = [];
  });
  afterAll(() => {
    reader.close();
    server.closeAllConnections();
    server.close();
  });

  it('reads the whole object, and a range with the Range header on the signed URL as given', async () => {
    const whole = await reader.read(`${base}/bucket/k?X-Amz-Signature=s3cr3t`);
    expect(whole).toMatchObject({ status: 200, contentLength: body.length });
    expect((await read(whole.body)).equals(body)).toBe(true);
    const part = await reader.read(`${base}/bucket/k?X-Amz-Signature=s3cr3t`, { start: 3, end: 7 });
    expect(part).toMatchObject({ status: 206, contentLength: 5, contentRange: `bytes 3-7/${body.length}` });
    expect((await read(part.body)).toString()).toBe('34567');
    expect(seen.map((req) => [req.url, req.headers.range])).toEqual([
      ['/bucket/k?X-Amz-Signature=s3cr3t', undefined],
      ['/bucket/k?X-Amz-Signature=s3cr3t', 'bytes=3-7'],
    ]);
  });

  it("answers S3's 404 as not_found, with nothing logged: a missing object is the caller's to judge", async () => {
    await expect(reader.read(`${base}/bucket/missing?sig=1`)).rejects.toMatchObject({ code: 'not_found' });
    expect(failures).toEqual([]);
  });

  it("answers any other refusal as service_unavailable and logs S3's code, never the signed query", async () => {
    await expect(reader.read(`${base}/bucket/denied?X-Amz-Signature=s3cr3t`)).rejects.toMatchObject({
      code: 'service_unavailable',
    });
    expect(failures).toEqual([{ host: new URL(base).host, path: '/bucket/denied', status: 403, code: 'AccessDenied' }]);
    expect(JSON.stringify(failures)).not.toContain('s3cr3t');
  });

  it('refuses an answer that ignored the Range, whose bytes would not be the ones promised to the client', async () => {
    await expect(reader.read(`${base}/bucket/ignores-range`, { start: 3, end: 7 })).rejects.toMatchObject({
      code: 'service_unavailable',
    });
    expect(failures).toEqual([
      {
        host: new URL(base).host,
        path: '/bucket/ignores-range',
        status: 200,
        code: 'answered 20 bytes for a range of 5',
      },
    ]);
    // Ignoring a range that is the whole object changes nothing: the bytes are the ones asked for.
    const whole = await reader.read(`${base}/bucket/ignores-range`, { start: 0, end: body.length - 1 });
    expect((await read(whole.body)).equals(body)).toBe(true);
  });

  it('gives up on an S3 that does not answer within the idle timeout, and then refuses reads at once', async () => {
    await expect(reader.read(`${base}/bucket/silent`)).rejects.toMatchObject({ code: 'service_unavailable' });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toEqual({ host: new URL(base).host, path: '/bucket/silent', code: 'S3 read stalled' });
    // Marked down: the next read is not sent at all, until a probe of the endpoint answers.
    const sentBefore = seen.length;
    await expect(reader.read(`${base}/bucket/ignores-range`)).rejects.toMatchObject({ status: 503 });
    expect(seen.filter((req) => req.url !== '/')).toHaveLength(sentBefore);
    expect(reader.breaker.isUp).toBe(false);
    await expect.poll(() => reader.breaker.isUp, { timeout: 5_000 }).toBe(true);
    await expect(reader.read(`${base}/bucket/ignores-range`)).resolves.toMatchObject({ contentLength: body.length });
  });

  it('cuts a body that stalls mid-way, so the reader sees an error rather than waiting for ever', async () => {
    const stalled = await reader.read(`${base}/bucket/stalls`);
    await expect(read(stalled.body)).rejects.toThrow();
  });

  it('answers service_unavailable when S3 cannot be reached, many reads at once', async () => {
    reader.close();
    reader = newReader();
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    closed.close();
    await once(closed, 'close');
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, () => reader.read(`http://127.0.0.1:${port}/bucket/k`)),
    );
    expect(results.map((result) => result.status === 'rejected' && result.reason.code)).toEqual(
      Array(16).fill('service_unavailable'),
    );
    // Each was sent before the first refusal marked S3 down; the next is refused before it is sent.
    expect(failures.map((failure) => failure.code)).toEqual(Array(16).fill('ECONNREFUSED'));
    await expect(reader.read(`http://127.0.0.1:${port}/bucket/k`)).rejects.toMatchObject({ status: 503 });
    expect(failures).toHaveLength(16);
  });
});
