import { createHash, randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../support/api';
import { count, db } from '../support/db';
import { E2E_BASE_URL, E2E_PORT_BASE, KEYS, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { e2eStack, servedByEveryProcess } from '../support/replicas';
import { objectExists, unfinishedUploads } from '../support/s3';
import { Stack } from '../support/stack';

const MiB = 1024 * 1024;
const client = new OpenAI({ apiKey: KEYS.alice, baseURL: `${E2E_BASE_URL}/v1`, maxRetries: 0, timeout: 600_000 });
const hex = (name: string, data: Buffer) => createHash(name).update(data).digest('hex');

/** The storage keys of an upload's parts, read before they go (to prove on the bucket that they went). */
async function partKeys(uploadId: string): Promise<string[]> {
  const { rows } = await db.query(
    `SELECT o.storage_key AS key FROM upload_parts p JOIN stored_objects o ON o.id = p.object_id
      WHERE p.upload_id = $1`,
    [uploadId],
  );
  return rows.map((row) => row.key as string);
}

/** The key of the upload's own multipart upload (its blocks), or null for an upload under 5 MiB. */
async function uploadKey(uploadId: string): Promise<string | null> {
  const { rows } = await db.query('SELECT storage_key AS key FROM uploads WHERE id = $1', [uploadId]);
  return (rows[0]?.key as string | null) ?? null;
}

/** Nothing of these keys is left: no object, and no unfinished multipart upload. */
async function allGone(keys: (string | null)[]): Promise<boolean> {
  const unfinished = (await unfinishedUploads()).map((entry) => entry.split('#')[0]);
  for (const key of keys) {
    if (key === null) continue;
    if (unfinished.includes(key) || (await objectExists(key))) return false;
  }
  return true;
}

async function fileStatus(fileId: string): Promise<{ status: string; sha256: string | null }> {
  return (await api('GET', `/v1/files/${fileId}`)).json;
}

async function sendParts(uploadId: string, chunks: Buffer[], inFlight: number): Promise<string[]> {
  const ids: string[] = new Array(chunks.length);
  // Sent in reverse order, `inFlight` at a time: the server must not care in which order parts come.
  const order = chunks.map((_, index) => chunks.length - 1 - index);
  const worker = async () => {
    for (let index = order.shift(); index !== undefined; index = order.shift()) {
      const part = await client.uploads.parts.create(uploadId, { data: await toFile(chunks[index], 'part') });
      ids[index] = part.id;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return ids;
}

/** A pending upload of `bytes` bytes of application/octet-stream, for purpose user_data. */
function newUpload(filename: string, bytes: number) {
  return client.uploads.create({ bytes, filename, mime_type: 'application/octet-stream', purpose: 'user_data' });
}

async function downloadSha256(fileId: string): Promise<string> {
  const res = await client.files.content(fileId);
  const hash = createHash('sha256');
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
  return hash.digest('hex');
}

describe('resumable uploads with the official openai SDK (uploads.*)', () => {
  it('a 200 MiB file in 8 parallel parts, one re-sent, completed out of arrival order, with md5', async () => {
    const data = randomBytes(200 * MiB);
    const chunks = Array.from({ length: 8 }, (_, i) => data.subarray(i * 25 * MiB, (i + 1) * 25 * MiB));
    const upload = await client.uploads.create({
      bytes: data.length,
      filename: 'big.bin',
      mime_type: 'application/octet-stream',
      purpose: 'assistants',
    });
    expect(upload).toMatchObject({ object: 'upload', status: 'pending', bytes: data.length, filename: 'big.bin' });
    expect(upload.expires_at - upload.created_at).toBe(3600);
    const ids = await sendParts(upload.id, chunks, 4);
    // Part 3 re-sent: a new part; the first one is unused and dropped at completion.
    const resent = await client.uploads.parts.create(upload.id, { data: await toFile(chunks[3], 'part') });
    expect(resent.id).not.toBe(ids[3]);
    ids[3] = resent.id;
    const listed = await api('GET', `/v1/uploads/${upload.id}/parts`);
    expect(listed.json.data).toHaveLength(9);
    expect(listed.json.data.every((part: { bytes: number }) => part.bytes === 25 * MiB)).toBe(true);
    // Behind the load balancer of the replicas topology, the parts of one upload went to both gateways.
    const perGateway = await servedByEveryProcess(e2eStack(), 'gateway', 'POST', `/v1/uploads/${upload.id}/parts`);
    expect(perGateway.reduce((sum, n) => sum + n)).toBe(9);
    // 25 MiB parts are blocks of the upload's own multipart upload, not objects of their own.
    expect(await partKeys(upload.id)).toHaveLength(0);
    const keys = [await uploadKey(upload.id)];
    expect(keys[0]).toMatch(/^uploads\//);
    expect(await unfinishedUploads()).toContainEqual(expect.stringMatching(new RegExp(`^${keys[0]}#`)));

    const started = Date.now();
    const completed = await client.uploads.complete(upload.id, { part_ids: ids, md5: hex('md5', data) });
    const completionMs = Date.now() - started;
    expect(completed.status).toBe('completed');
    expect(completed.file).toMatchObject({ object: 'file', bytes: data.length, filename: 'big.bin' });
    const file = completed.file as unknown as { id: string; sha256: string; status: string };
    expect(file.sha256).toBe(hex('sha256', data));
    expect(file.status).toBe('processed');
    console.log(`200 MiB upload: completion took ${completionMs} ms`);

    // Completing twice returns the same file; the file is a file like any other.
    expect((await client.uploads.complete(upload.id, { part_ids: ids })).file?.id).toBe(file.id);
    expect((await client.files.retrieve(file.id)).bytes).toBe(data.length);
    expect(await downloadSha256(file.id)).toBe(hex('sha256', data));
    // Every part, the unused one too, leaves the bucket and the tables: the staged blocks' object goes.
    await pollUntil(() => allGone(keys), 'the parts are purged from the bucket', 60_000);
    expect(await count('SELECT count(*) FROM upload_parts WHERE upload_id = $1', [upload.id])).toBe(0);
    await client.files.delete(file.id);
  });

  it('parts sent front to back join without a copy: "uploaded" at once, downloadable, then "processed"', async () => {
    const data = randomBytes(4 * 8 * MiB + 3 * MiB);
    const chunks = [0, 1, 2, 3, 4].map((i) => data.subarray(i * 8 * MiB, Math.min(data.length, (i + 1) * 8 * MiB)));
    const upload = await newUpload('ordered.bin', data.length);
    const key = await uploadKey(upload.id);
    const ids: string[] = [];
    for (const chunk of chunks)
      ids.push((await client.uploads.parts.create(upload.id, { data: await toFile(chunk, 'p') })).id);
    // Four blocks and a 3 MiB last part (an object, copied in as the last S3 part).
    const smallKeys = await partKeys(upload.id);
    expect(smallKeys).toHaveLength(1);
    const done = await client.uploads.complete(upload.id, { part_ids: ids });
    const file = done.file as unknown as { id: string; status: string; sha256: string | null; bytes: number };
    expect(file.bytes).toBe(data.length);
    expect(file.status).toBe('uploaded');
    expect(file.sha256).toBeNull();
    // The file's object is the multipart upload's own key: nothing was copied.
    expect(
      (
        await db.query(
          'SELECT o.storage_key AS key FROM files f JOIN stored_objects o ON o.id = f.object_id WHERE f.id = $1',
          [file.id],
        )
      ).rows[0].key,
    ).toBe(key);
    expect(await downloadSha256(file.id)).toBe(hex('sha256', data));
    await pollUntil(
      async () => (await fileStatus(file.id)).status === 'processed',
      'the worker hashes the file',
      60_000,
    );
    expect((await fileStatus(file.id)).sha256).toBe(hex('sha256', data));
    await pollUntil(() => allGone(smallKeys), 'the small part is purged', 30_000);
    expect(await unfinishedUploads()).not.toContainEqual(expect.stringMatching(new RegExp(`^${key}#`)));
    await client.files.delete(file.id);
    await pollUntil(() => allGone([key]), 'the deleted file leaves the bucket', 30_000);
  });

  it('an unused part in the multipart upload: named parts in order still make the file, by the staged path', async () => {
    const data = randomBytes(12 * MiB);
    const upload = await newUpload('unused.bin', data.length);
    const first = await client.uploads.parts.create(upload.id, { data: await toFile(data.subarray(0, 6 * MiB), 'a') });
    await client.uploads.parts.create(upload.id, { data: await toFile(randomBytes(6 * MiB), 'unused') });
    const second = await client.uploads.parts.create(upload.id, { data: await toFile(data.subarray(6 * MiB), 'b') });
    const done = await client.uploads.complete(upload.id, { part_ids: [first.id, second.id] });
    const file = done.file as unknown as { id: string; status: string; sha256: string };
    expect(file).toMatchObject({ status: 'processed', sha256: hex('sha256', data) });
    expect(await downloadSha256(file.id)).toBe(hex('sha256', data));
    const key = await uploadKey(upload.id);
    await pollUntil(() => allGone([key]), 'the staged parts leave the bucket', 30_000);
    await client.files.delete(file.id);
  });

  it('a part request padded past 6 MiB around a small data part is 400 invalid_multipart, and keeps nothing', async () => {
    const upload = await newUpload('padded.bin', 20 * MiB);
    const boundary = 'paddedBoundary0123456789';
    // A preamble before the first boundary is allowed by multipart and ignored: here 6 MiB of it.
    const body = Buffer.concat([
      Buffer.alloc(6 * MiB, 'x'),
      Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="p"\r\n\r\n`),
      randomBytes(MiB),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const res = await api('POST', `/v1/uploads/${upload.id}/parts`, {
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      raw: body,
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_multipart', param: 'data' });
    expect((await api('GET', `/v1/uploads/${upload.id}/parts`)).json.data).toEqual([]);
    await client.uploads.cancel(upload.id);
  });

  it('small parts (below S3’s 5 MiB) in any order are concatenated in the order of part_ids', async () => {
    const a = randomBytes(1000);
    const b = randomBytes(3 * MiB);
    const c = Buffer.from('tail');
    const upload = await client.uploads.create({
      bytes: a.length + b.length + c.length,
      filename: 'small.txt',
      mime_type: 'text/plain',
      purpose: 'user_data',
    });
    const pc = await client.uploads.parts.create(upload.id, { data: await toFile(c, 'c') });
    const pa = await client.uploads.parts.create(upload.id, { data: await toFile(a, 'a') });
    const pb = await client.uploads.parts.create(upload.id, { data: await toFile(b, 'b') });
    const done = await client.uploads.complete(upload.id, { part_ids: [pa.id, pb.id, pc.id] });
    const whole = Buffer.concat([a, b, c]);
    expect((done.file as unknown as { sha256: string }).sha256).toBe(hex('sha256', whole));
    const content = Buffer.from(await (await client.files.content(done.file!.id)).arrayBuffer());
    expect(content.equals(whole)).toBe(true);
    expect(content.length).toBe(whole.length);
  });

  it('wrong bytes and wrong md5 are 400 with their param, and the upload stays pending for a corrected retry', async () => {
    const data = randomBytes(6 * MiB);
    const upload = await newUpload('retry.bin', data.length + 1);
    const part = await client.uploads.parts.create(upload.id, { data: await toFile(data, 'p') });
    const wrongBytes = await client.uploads.complete(upload.id, { part_ids: [part.id] }).catch((error) => error);
    expect(wrongBytes).toBeInstanceOf(OpenAI.BadRequestError);
    expect(wrongBytes.param).toBe('bytes');
    expect((await api('GET', `/v1/uploads/${upload.id}`)).json.status).toBe('pending');
    // One more byte makes bytes right; then a wrong md5, then the right one.
    const last = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('!'), 'q') });
    const whole = Buffer.concat([data, Buffer.from('!')]);
    const wrongMd5 = await client.uploads
      .complete(upload.id, { part_ids: [part.id, last.id], md5: '0'.repeat(32) })
      .catch((error) => error);
    expect(wrongMd5).toBeInstanceOf(OpenAI.BadRequestError);
    expect(wrongMd5.param).toBe('md5');
    expect((await api('GET', `/v1/uploads/${upload.id}`)).json.status).toBe('pending');
    const unknown = await client.uploads
      .complete(upload.id, { part_ids: [part.id, 'part_000000000000000000000000'] })
      .catch((error) => error);
    expect(unknown.param).toBe('part_ids');
    const done = await client.uploads.complete(upload.id, { part_ids: [part.id, last.id], md5: hex('md5', whole) });
    expect(done.status).toBe('completed');
    expect(done.file?.bytes).toBe(whole.length);
  });

  it('cancel: cancelled, its parts purged from the bucket, and no more parts taken', async () => {
    const upload = await newUpload('cancel.bin', 12 * MiB);
    await client.uploads.parts.create(upload.id, { data: await toFile(randomBytes(6 * MiB), 'p') });
    await client.uploads.parts.create(upload.id, { data: await toFile(randomBytes(1 * MiB), 'p') });
    // One block (in the multipart upload) and one small part (an object).
    const keys = [...(await partKeys(upload.id)), await uploadKey(upload.id)];
    expect(keys).toHaveLength(2);
    const cancelled = await client.uploads.cancel(upload.id);
    expect(cancelled.status).toBe('cancelled');
    await pollUntil(() => allGone(keys), 'cancelled parts purged', 30_000);
    const late = await client.uploads.parts
      .create(upload.id, { data: await toFile(Buffer.from('x'), 'p') })
      .catch((error) => error);
    expect(late).toBeInstanceOf(OpenAI.ConflictError);
    const completing = await client.uploads.complete(upload.id, { part_ids: ['part_x'] }).catch((error) => error);
    expect(completing).toBeInstanceOf(OpenAI.ConflictError);
  });

  it('expiry by the sweep: expired, parts purged; limits: bytes over max_upload_bytes is 413', async () => {
    const upload = await client.uploads.create({
      bytes: 10,
      filename: 'expire.bin',
      mime_type: 'application/octet-stream',
      purpose: 'user_data',
      expires_after: { anchor: 'created_at', seconds: 7200 },
    });
    expect(upload.expires_at - upload.created_at).toBe(7200);
    await client.uploads.parts.create(upload.id, { data: await toFile(randomBytes(10), 'p') });
    const keys = await partKeys(upload.id);
    await db.query(`UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = $1`, [upload.id]);
    expect((await api('GET', `/v1/uploads/${upload.id}`)).json.status).toBe('expired');
    await pollUntil(
      async () => (await count(`SELECT count(*) FROM uploads WHERE id = $1 AND status = 'expired'`, [upload.id])) === 1,
      'the sweep expires the upload',
      30_000,
    );
    await pollUntil(() => allGone(keys), 'expired parts purged', 30_000);
    const tooBig = await client.uploads
      .create({ bytes: 65 * 1024 * MiB, filename: 'huge.bin', mime_type: 'text/plain', purpose: 'user_data' })
      .catch((error) => error);
    expect(tooBig.status).toBe(413);
    expect(tooBig.code).toBe('file_too_large');
    // Another principal sees nothing of it.
    expect((await api('GET', `/v1/uploads/${upload.id}`, { who: 'bob' })).status).toBe(404);
  });
});

describe('pending uploads per principal', () => {
  it('80 creates at once with the limit at 64: exactly the room left is created, the rest are 429 with Retry-After', async () => {
    const limits = (await api('GET', '/v1/limits', { who: 'bob' })).json;
    const max: number = limits.per_principal.pending_uploads;
    expect(max).toBe(64);
    const { rows } = await db.query(
      `SELECT count(*) AS n FROM uploads u JOIN principals p ON p.id = u.principal_id
        WHERE p.name = 'bob' AND u.status IN ('pending', 'completing') AND u.expires_at > now()`,
    );
    const room = max - Number(rows[0].n);
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        api('POST', '/v1/uploads', {
          who: 'bob',
          json: { filename: `p${i}.txt`, purpose: 'user_data', bytes: 10, mime_type: 'text/plain' },
        }),
      ),
    );
    const created = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(created).toHaveLength(room);
    expect(refused).toHaveLength(80 - room);
    expect(refused[0].json.error.code).toBe('rate_limited');
    expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThan(0);
    // Cancelling one makes room for one.
    await api('POST', `/v1/uploads/${created[0].json.id}/cancel`, { who: 'bob' });
    const again = await api('POST', '/v1/uploads', {
      who: 'bob',
      json: { filename: 'again.txt', purpose: 'user_data', bytes: 10, mime_type: 'text/plain' },
    });
    expect(again.status).toBe(200);
    for (const upload of [...created.slice(1), again])
      expect((await api('POST', `/v1/uploads/${upload.json.id}/cancel`, { who: 'bob' })).status).toBe(200);
  });
});

describe('two gateway processes taking turns on one upload', () => {
  // A second gateway on the same database and storage service: no sticky sessions, no shared memory.
  const second = new Stack(testPort(18280), { STORAGE_URL: `http://127.0.0.1:${E2E_PORT_BASE + 1}` });
  beforeAll(() => second.start(['gateway']));
  afterAll(() => second.stop());

  it('while one completes, the other answers 409 to a completion and to a part; then both give the same file', async () => {
    const other = new OpenAI({ apiKey: KEYS.alice, baseURL: `${second.baseUrl}/v1`, maxRetries: 0 });
    const data = randomBytes(48 * MiB);
    const upload = await newUpload('turns.bin', data.length);
    // Parts through both gateways, in parallel.
    const [p1, p2] = await Promise.all([
      client.uploads.parts.create(upload.id, { data: await toFile(data.subarray(0, 24 * MiB), 'a') }),
      other.uploads.parts.create(upload.id, { data: await toFile(data.subarray(24 * MiB), 'b') }),
    ]);
    const first = client.uploads.complete(upload.id, { part_ids: [p1.id, p2.id] });
    await pollUntil(
      async () =>
        (await count(`SELECT count(*) FROM uploads WHERE id = $1 AND status = 'completing'`, [upload.id])) === 1,
      'the first gateway holds the upload',
      30_000,
      5,
    );
    const loser = await other.uploads.complete(upload.id, { part_ids: [p1.id, p2.id] }).catch((error) => error);
    expect(loser).toBeInstanceOf(OpenAI.ConflictError);
    expect(loser.code).toBe('upload_conflict');
    const latePart = await other.uploads.parts
      .create(upload.id, { data: await toFile(Buffer.from('late'), 'c') })
      .catch((error) => error);
    expect(latePart).toBeInstanceOf(OpenAI.ConflictError);
    const won = await first;
    expect(won.status).toBe('completed');
    // Blocks named in the order the gateways took them join without a copy: hashed later, by the worker.
    await pollUntil(async () => (await fileStatus(won.file!.id)).status === 'processed', 'the file is hashed', 60_000);
    expect((await fileStatus(won.file!.id)).sha256).toBe(hex('sha256', data));
    const again = await other.uploads.complete(upload.id, { part_ids: [p1.id, p2.id] });
    expect(again.file?.id).toBe(won.file?.id);
  });
});
