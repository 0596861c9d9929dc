import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Upload } from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../support/api';
import { E2E_BASE_URL, E2E_PORT_BASE, KEYS, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { e2eStack, servedByEveryProcess } from '../support/replicas';
import { objectExists } from '../support/s3';
import { db } from '../support/db';
import { Stack } from '../support/stack';

const MiB = 1024 * 1024;
const auth = { authorization: `Bearer ${KEYS.alice}` };
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const tusHeaders = { ...auth, 'tus-resumable': '1.0.0' };
const meta = (values: Record<string, string>) =>
  Object.entries(values)
    .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
    .join(',');

async function head(url: string) {
  const res = await fetch(url, { method: 'HEAD', headers: tusHeaders });
  return { status: res.status, offset: Number(res.headers.get('upload-offset')), fileId: res.headers.get('x-file-id') };
}

describe('tus 1.0 at /v1/tus with tus-js-client under Node', () => {
  it('an upload interrupted at 60 % resumes from the server’s offset and becomes a file', async () => {
    const data = randomBytes(20 * MiB + 123);
    let firstRun: Upload | null = null;
    const url = await new Promise<string>((resolve, reject) => {
      const upload: Upload = new Upload(data, {
        endpoint: `${E2E_BASE_URL}/v1/tus`,
        headers: auth,
        chunkSize: 5 * MiB,
        retryDelays: [],
        metadata: { filename: 'tus.bin', purpose: 'user_data', content_type: 'application/octet-stream' },
        onProgress: (sent) => {
          if (sent >= 0.6 * data.length && upload.url) {
            void upload.abort().then(() => resolve(upload.url!));
          }
        },
        onError: reject,
        onSuccess: () => reject(new Error('finished before the interruption')),
      });
      firstRun = upload;
      upload.start();
    });
    expect(firstRun).not.toBeNull();
    const before = await head(url);
    expect(before.status).toBe(200);
    expect(before.offset).toBeGreaterThan(0);
    expect(before.offset).toBeLessThan(data.length);
    expect(before.offset % (5 * MiB)).toBe(0);

    const resumedFrom: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const upload = new Upload(data, {
        endpoint: `${E2E_BASE_URL}/v1/tus`,
        uploadUrl: url,
        headers: auth,
        chunkSize: 5 * MiB,
        retryDelays: [],
        onProgress: (sent) => {
          if (resumedFrom.length === 0) resumedFrom.push(sent);
        },
        onError: reject,
        onSuccess: () => resolve(),
      });
      upload.start();
    });
    // The second run sent only what the server did not have.
    expect(resumedFrom[0]).toBeGreaterThanOrEqual(before.offset);
    // Behind the load balancer of the replicas topology, its chunks went to both gateways.
    await servedByEveryProcess(e2eStack(), 'gateway', 'PATCH', new URL(url).pathname);
    const after = await head(url);
    expect(after.offset).toBe(data.length);
    expect(after.fileId).toMatch(/^file_/);
    const file = await api('GET', `/v1/files/${after.fileId}`);
    expect(file.json).toMatchObject({ filename: 'tus.bin', bytes: data.length, sha256: sha(data) });
    const content = await api('GET', `/v1/files/${after.fileId}/content`);
    expect(sha(content.body)).toBe(sha(data));
  });

  it('checksum, creation-with-upload, termination, CORS preflight, and the version header', async () => {
    const preflight = await fetch(`${E2E_BASE_URL}/v1/tus`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('tus-extension')).toContain('checksum');
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Upload-Offset');
    // A browser can read why it was refused: the 401 of a missing or wrong key carries CORS too.
    for (const authorization of [undefined, 'Bearer sk_wrong']) {
      const refused = await fetch(`${E2E_BASE_URL}/v1/tus`, {
        method: 'POST',
        headers: { 'tus-resumable': '1.0.0', 'upload-length': '10', ...(authorization ? { authorization } : {}) },
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('access-control-allow-origin')).toBe('*');
      expect(refused.headers.get('tus-resumable')).toBe('1.0.0');
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    }

    expect((await fetch(`${E2E_BASE_URL}/v1/tus`, { method: 'POST', headers: auth })).status).toBe(412);

    // creation-with-upload: the first bytes in the POST.
    const data = randomBytes(3000);
    const created = await fetch(`${E2E_BASE_URL}/v1/tus`, {
      method: 'POST',
      headers: {
        ...tusHeaders,
        'upload-length': String(data.length),
        'upload-metadata': meta({ filename: 'c.txt', content_type: 'text/plain' }),
        'content-type': 'application/offset+octet-stream',
      },
      body: data.subarray(0, 1000),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('upload-offset')).toBe('1000');
    const url = created.headers.get('location')!;
    const patch = (offset: number, body: Buffer, checksum?: string) =>
      fetch(url, {
        method: 'PATCH',
        headers: {
          ...tusHeaders,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
          ...(checksum ? { 'upload-checksum': checksum } : {}),
        },
        body,
      });
    const next = data.subarray(1000, 2000);
    const wrong = await patch(1000, next, `sha1 ${createHash('sha1').update('nope').digest('base64')}`);
    expect(wrong.status).toBe(460);
    expect((await head(url)).offset).toBe(1000);
    expect((await patch(500, next)).status).toBe(409);
    const right = await patch(1000, next, `sha256 ${createHash('sha256').update(next).digest('base64')}`);
    expect(right.status).toBe(204);
    expect(right.headers.get('upload-offset')).toBe('2000');

    const { rows } = await db.query(
      `SELECT o.storage_key AS key FROM upload_parts p JOIN stored_objects o ON o.id = p.object_id
        JOIN uploads u ON u.id = p.upload_id WHERE u.id = $1`,
      [url.split('/').pop()],
    );
    expect(rows).toHaveLength(2);
    const terminated = await fetch(url, { method: 'DELETE', headers: tusHeaders });
    expect(terminated.status).toBe(204);
    expect((await head(url)).status).toBe(404);
    for (const { key } of rows)
      await pollUntil(async () => !(await objectExists(key as string)), 'terminated parts purged', 30_000);
  });
});

describe('tus across two gateway processes', () => {
  const second = new Stack(testPort(18380), { STORAGE_URL: `http://127.0.0.1:${E2E_PORT_BASE + 1}` });
  beforeAll(() => second.start(['gateway']));
  afterAll(() => second.stop());

  it('a PATCH on one gateway while another PATCH writes the upload elsewhere is 409; the offset stays right', async () => {
    const data = randomBytes(2 * MiB);
    const created = await fetch(`${E2E_BASE_URL}/v1/tus`, {
      method: 'POST',
      headers: { ...tusHeaders, 'upload-length': String(data.length), 'upload-metadata': meta({ filename: 't.bin' }) },
    });
    const path = new URL(created.headers.get('location')!).pathname;
    // A slow PATCH through the first gateway: half the bytes, then it waits.
    let finish!: () => void;
    const slow = new Promise<number>((resolve, reject) => {
      const req = request(`${E2E_BASE_URL}${path}`, {
        method: 'PATCH',
        headers: {
          ...tusHeaders,
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
          'content-length': String(data.length),
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.write(data.subarray(0, MiB));
      finish = () => req.end(data.subarray(MiB));
    });
    await pollUntil(
      async () =>
        (await db.query(`SELECT 1 FROM uploads WHERE id = $1 AND claimed_until > now()`, [path.split('/').pop()]))
          .rowCount === 1,
      'the first PATCH holds the upload',
      10_000,
      20,
    );
    const loser = await fetch(`${second.baseUrl}${path}`, {
      method: 'PATCH',
      headers: { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: data,
    });
    expect(loser.status).toBe(409);
    finish();
    expect(await slow).toBe(204);
    const after = await fetch(`${second.baseUrl}${path}`, { method: 'HEAD', headers: tusHeaders });
    expect(after.headers.get('upload-offset')).toBe(String(data.length));
    const fileId = after.headers.get('x-file-id');
    const file = await api('GET', `/v1/files/${fileId}`);
    expect(file.json.sha256).toBe(sha(data));
  });
});
