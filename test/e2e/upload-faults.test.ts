import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { api, BOUNDARY, CLOSE, fileForm, MULTIPART_TYPE, newSession, partHead, rawRequest } from '../support/api';
import { count, dbNow, leftoversSince } from '../support/db';
import { TEST_MAX_SINGLE_REQUEST_FILE_BYTES, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { objectKeys, unfinishedUploads } from '../support/s3';
import { S3FaultProxy } from '../support/s3-fault-proxy';
import { Stack } from '../support/stack';

const MAX = TEST_MAX_SINGLE_REQUEST_FILE_BYTES;
const nothingLeft = { objects: 0, files: 0, containerFiles: 0 };

async function expectNothingLeftSince(since: Date) {
  // Rejections answer after their cleanup, so nothing may be there even a moment later.
  expect(await leftoversSince(since)).toEqual(nothingLeft);
  expect(await unfinishedUploads()).toEqual([]);
}

/** A chunked multipart upload whose file part is one byte over the limit (no length declared up front). */
function chunkedOneByteOver() {
  return rawRequest('/v1/files', {
    headers: { 'content-type': MULTIPART_TYPE, 'transfer-encoding': 'chunked' },
    write: (req) => {
      req.write(partHead('file', 'chunked.bin'));
      let left = MAX + 1;
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, 256 * 1024);
          left -= n;
          if (!req.write(randomBytes(n))) return void req.once('drain', pump);
        }
        req.end(CLOSE);
      };
      pump();
    },
  });
}

describe('uploads that must fail and leave nothing behind', () => {
  it('answers 413 from Content-Length before reading the body, to a client still writing', async () => {
    const since = await dbNow();
    // A client that writes its whole body before reading (as fetch does): twice the limit, the drain budget.
    const declared = MAX * 2;
    const res = await rawRequest('/v1/files', {
      headers: { 'content-type': MULTIPART_TYPE, 'content-length': declared },
      write: (req) => {
        req.write(partHead('file', 'huge.bin'));
        // Keep writing like Node's fetch does: the answer must still arrive, not a broken pipe.
        let sent = 0;
        const pump = () => {
          while (sent < declared - 1024) {
            sent += 64 * 1024;
            if (!req.write(randomBytes(64 * 1024))) return void req.once('drain', pump);
          }
          req.end();
        };
        pump();
      },
    }).catch((error) => ({ status: -1, body: String(error), headers: {} }));
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error).toMatchObject({
      code: 'file_too_large',
      type: 'invalid_request_error',
      param: 'file',
    });
    await expectNothingLeftSince(since);
  });

  it('counts a chunked body and answers 413 one byte past max_file_bytes', async () => {
    const since = await dbNow();
    const res = await chunkedOneByteOver();
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error.code).toBe('file_too_large');
    await expectNothingLeftSince(since);
  });

  it('answers 413 to many oversized uploads at once, past the drain budget too, and leaves nothing in rows or the bucket', async () => {
    const since = await dbNow();
    const keysBefore = await objectKeys();
    // Half are refused from their headers and keep writing three times the limit, past the drain budget (the
    // connection then closes lingering); half are chunked and refused by the storage service one byte past the cap.
    const declaredTooLong = () =>
      rawRequest('/v1/files', {
        headers: { 'content-type': MULTIPART_TYPE, 'content-length': MAX * 3 },
        write: (req) => {
          req.write(partHead('file', 'declared.bin'));
          let sent = 0;
          const pump = () => {
            while (sent < MAX * 3 - 1024) {
              sent += 64 * 1024;
              if (!req.write(randomBytes(64 * 1024))) return void req.once('drain', pump);
            }
            req.end();
          };
          pump();
        },
      });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 === 0 ? declaredTooLong() : chunkedOneByteOver()).catch((error) => ({
          status: -1,
          body: String(error),
          headers: {},
        })),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(413));
    for (const answer of answers) expect(JSON.parse(answer.body).error.code).toBe('file_too_large');
    await expectNothingLeftSince(since);
    const keysAfter = await objectKeys();
    expect([...keysAfter].filter((key) => !keysBefore.has(key))).toEqual([]);
  });

  it('accepts exactly max_file_bytes', async () => {
    const res = await api('POST', '/v1/files', { form: fileForm('exact.bin', randomBytes(MAX)) });
    expect(res.status).toBe(200);
    expect(res.json.bytes).toBe(MAX);
  });

  it('answers 413 for an oversized container upload', async () => {
    const session = await newSession();
    const since = await dbNow();
    const res = await api('POST', `/v1/containers/${session.container_id}/files`, {
      form: fileForm('big.bin', randomBytes(MAX + 1)),
    });
    expect(res.status).toBe(413);
    expect(res.json.error.code).toBe('file_too_large');
    await expectNothingLeftSince(since);
  });

  it.each([
    [
      'malformed multipart',
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="x.txt"\r\n\r\nno closing boundary`,
      'invalid_multipart',
    ],
    ['no file part', `${partHead('purpose')}user_data${CLOSE}`, 'missing_file'],
    [
      'two file parts',
      `${partHead('file', 'a.txt')}aaa\r\n${partHead('file', 'b.txt')}bbb${CLOSE}`,
      'invalid_multipart',
    ],
    ['a dot-dot filename', `${partHead('file', '..')}x${CLOSE}`, 'invalid_filename'],
    // Found by the fuzzer's probe of past breaks: busboy turns a file part with filename="" into a field.
    ['an empty filename', `${partHead('file', '')}x${CLOSE}`, 'invalid_filename'],
    ['a file part with no filename', `${partHead('file')}x${CLOSE}`, 'invalid_filename'],
    ['a control character in the filename', `${partHead('file', 'tab\there.txt')}x${CLOSE}`, 'invalid_filename'],
    ['a bidi override in the filename', `${partHead('file', 'evil\u202Etxt.exe')}x${CLOSE}`, 'invalid_filename'],
  ])('rejects %s with 400 %s', async (_label, body, code) => {
    const since = await dbNow();
    const res = await rawRequest('/v1/files', {
      headers: { 'content-type': MULTIPART_TYPE },
      write: (req) => req.end(Buffer.from(body, 'utf8')),
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatchObject({ type: 'invalid_request_error', code });
    await expectNothingLeftSince(since);
  });

  it('answers a body that is not multipart with 415', async () => {
    const res = await rawRequest('/v1/files', {
      headers: { 'content-type': 'text/plain' },
      write: (req) => req.end('hello'),
    });
    expect(res.status).toBe(415);
    expect(JSON.parse(res.body).error.code).toBe('unsupported_media_type');
  });

  it('discards the upload of a client that disconnects mid-upload', async () => {
    const since = await dbNow();
    await rawRequest('/v1/files', {
      headers: { 'content-type': MULTIPART_TYPE, 'transfer-encoding': 'chunked' },
      write: (req) => {
        req.write(partHead('file', 'vanishing.bin'));
        req.write(randomBytes(MAX / 2));
        setTimeout(() => req.destroy(), 300);
      },
    }).catch(() => undefined);
    await pollUntil(
      async () => (await leftoversSince(since)).objects === 0 && (await unfinishedUploads()).length === 0,
      'the half upload is gone',
      20_000,
    );
    expect(await leftoversSince(since)).toEqual(nothingLeft);
  });
});

describe('the storage service dying mid-upload', () => {
  const stack = new Stack(testPort(18180), {
    STORAGE_ABANDONED_UPLOAD_SECONDS: '1',
    STORAGE_SWEEP_INTERVAL_MS: '1000',
    UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(64 * 1024 * 1024),
    S3_PART_SIZE_BYTES: String(5 * 1024 * 1024),
  });
  afterAll(() => stack.stop());

  it('answers 503, keeps no file, and the restarted storage service aborts the orphaned multipart upload', async () => {
    await stack.start();
    const since = await dbNow();
    const result = rawRequest('/v1/files', {
      base: stack.baseUrl,
      headers: { 'content-type': MULTIPART_TYPE, 'transfer-encoding': 'chunked' },
      write: (req) => {
        req.write(partHead('file', 'crash.bin'));
        // Two 5 MiB parts and more: a multipart upload is open on S3 when the storage service dies.
        req.write(randomBytes(12 * 1024 * 1024));
        // Kill it once S3 shows the upload open (a fixed delay raced a busy machine).
        void pollUntil(
          async () => (await unfinishedUploads()).length > 0,
          'a multipart upload open on S3',
          30_000,
          50,
        ).then(() => {
          stack.kill('storage');
          setTimeout(() => req.end(CLOSE), 200);
        });
      },
    });
    const res = await result.catch((error) => ({ status: -1, body: String(error), headers: {} }));
    expect([503, -1]).toContain(res.status);
    if (res.status === 503) expect(JSON.parse(res.body).error.code).toBe('service_unavailable');
    await sleep(500);
    expect(await count('SELECT count(*) FROM files WHERE created_at >= $1', [since])).toBe(0);
    expect((await unfinishedUploads()).length).toBeGreaterThan(0);
    await stack.start(['storage']);
    await pollUntil(
      async () => (await unfinishedUploads()).length === 0,
      'orphaned multipart uploads aborted by the restarted storage service',
      30_000,
    );
    await pollUntil(
      async () => (await leftoversSince(since)).objects === 0,
      'the stored-object row is reclaimed',
      30_000,
    );
  });
});

describe('S3 failing mid-upload', () => {
  const proxy = new S3FaultProxy();
  let stack: Stack;
  afterAll(async () => {
    await stack?.stop();
    await proxy.stop();
  });

  it('answers 503 once S3 keeps failing parts, and aborts the multipart upload so nothing is left', async () => {
    const endpoint = await proxy.start();
    stack = new Stack(testPort(18580), {
      S3_ENDPOINT: endpoint,
      UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(64 * 1024 * 1024),
      S3_PART_SIZE_BYTES: String(5 * 1024 * 1024),
      S3_UPLOAD_QUEUE_SIZE: '1',
    });
    await stack.start(['storage', 'gateway']);
    const since = await dbNow();
    const res = await rawRequest('/v1/files', {
      base: stack.baseUrl,
      headers: { 'content-type': MULTIPART_TYPE, 'transfer-encoding': 'chunked' },
      write: (req) => {
        req.write(partHead('file', 's3-fails.bin'));
        req.write(randomBytes(6 * 1024 * 1024)); // the first part goes through
        const waitForFirstPart = setInterval(() => {
          if (proxy.partsSeen < 1) return;
          clearInterval(waitForFirstPart);
          proxy.failParts = true; // from the second part on, S3 answers 500
          req.write(randomBytes(6 * 1024 * 1024));
          req.end(CLOSE);
        }, 50);
      },
    });
    expect(proxy.partsFailed).toBeGreaterThan(0);
    expect(res.status).toBe(503);
    expect(JSON.parse(res.body).error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });
    expect(res.headers['retry-after']).toBeDefined();
    await expectNothingLeftSince(since);
  });
});
