import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { CreateMultipartUploadCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PresignedUrlReader, StorageClient } from '@app/common';
import { readUrlPath } from '@app/contracts';
import { TEST_BUCKET, TEST_STORAGE_TOKEN, testPort } from '../support/env';
import { objectExists, s3, unfinishedUploads } from '../support/s3';
import { pollUntil } from '../support/poll';
import { Stack } from '../support/stack';
import { Readable } from 'node:stream';
import { count, db } from '../support/db';

const MiB = 1024 * 1024;
// The storage service alone, with 5 MiB parts so a few MiB already make a real multipart upload.
const stack = new Stack(testPort(18280), { S3_PART_SIZE_BYTES: String(5 * MiB), UHP_MAX_FILE_BYTES: String(64 * MiB) });
const client = new StorageClient({ baseUrl: `http://127.0.0.1:${stack.port('storage')}`, token: TEST_STORAGE_TOKEN });
const key = () => `objects/${randomUUID()}`;
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

async function drain(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

beforeAll(() => stack.start(['storage']));
afterAll(() => stack.stop());

describe('storage service against the real S3 server', () => {
  it('streams a multipart put in, measures it, and reads it back whole and by range', async () => {
    const data = randomBytes(12 * MiB + 123);
    const k = key();
    const receipt = await client.put(k, Readable.from([data.subarray(0, 7 * MiB), data.subarray(7 * MiB)]), {
      maxBytes: 64 * MiB,
    });
    expect(receipt).toEqual({ key: k, bytes: data.length, sha256: sha(data) });
    // Its part buffers went back to the pool, which keeps them for the next upload (until 60 s unused).
    const metrics = await (await fetch(`http://127.0.0.1:${stack.port('storage')}/metrics`)).text();
    const gauge = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(metrics)?.[1]);
    expect(gauge('uhp_storage_part_buffer_allocated_bytes')).toBeGreaterThanOrEqual(2 * 5 * MiB);
    expect(gauge('uhp_storage_part_buffer_bytes')).toBeLessThan(gauge('uhp_storage_part_buffer_allocated_bytes'));
    const whole = await client.get(k);
    expect(whole.status).toBe(200);
    expect(sha(await drain(whole.body))).toBe(sha(data));
    const part = await client.get(k, { start: 6 * MiB - 10, end: 6 * MiB + 9 });
    expect(part.status).toBe(206);
    expect(part.contentRange).toBe(`bytes ${6 * MiB - 10}-${6 * MiB + 9}/${data.length}`);
    expect((await drain(part.body)).equals(data.subarray(6 * MiB - 10, 6 * MiB + 10))).toBe(true);
    await client.delete(k);
    expect(await objectExists(k)).toBe(false);
    await client.delete(k); // deleting twice is fine
  });

  it('stores an empty object', async () => {
    const k = key();
    expect((await client.put(k, Readable.from([]), { maxBytes: 10 })).bytes).toBe(0);
    expect(await objectExists(k)).toBe(true);
    await client.delete(k);
  });

  it('answers 413 one byte past the cap and leaves no object and no unfinished multipart upload', async () => {
    const k = key();
    const data = randomBytes(11 * MiB);
    await expect(client.put(k, Readable.from([data]), { maxBytes: 11 * MiB - 1 })).rejects.toMatchObject({
      code: 'file_too_large',
    });
    expect(await objectExists(k)).toBe(false);
    expect((await unfinishedUploads()).filter((u) => u.startsWith(k))).toEqual([]);
  });

  it('aborts the multipart upload when the caller goes away mid-put', async () => {
    const k = key();
    const cancel = new AbortController();
    const body = new Readable({ read() {} });
    const put = client.put(k, body, { maxBytes: 64 * MiB, signal: cancel.signal });
    body.push(randomBytes(11 * MiB)); // two parts are under way
    await pollUntil(
      async () => (await unfinishedUploads()).some((u) => u.startsWith(k)),
      'the multipart upload has started',
      20_000,
      100,
    );
    cancel.abort();
    await expect(put).rejects.toBeDefined();
    await client.delete(k); // waits for the put in flight to finish its cleanup
    expect((await unfinishedUploads()).filter((u) => u.startsWith(k))).toEqual([]);
    expect(await objectExists(k)).toBe(false);
  });

  it('refuses callers without the storage token and keys it did not make', async () => {
    const status = (path: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: stack.port('storage'), path, headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await status(`/internal/objects/${encodeURIComponent(key())}`, {})).toBe(401);
    expect(await status(`/internal/objects/${encodeURIComponent(key())}`, { authorization: 'Bearer wrong' })).toBe(401);
    expect(
      await status(`/internal/objects/${encodeURIComponent('../etc/passwd')}`, {
        authorization: `Bearer ${TEST_STORAGE_TOKEN}`,
      }),
    ).toBe(404);
    expect(
      await status(`/internal/objects/${encodeURIComponent(key())}`, { authorization: `Bearer ${TEST_STORAGE_TOKEN}` }),
    ).toBe(404);
  });
});

describe('reads straight from S3 through URLs the storage service signs', () => {
  const direct = new StorageClient({
    baseUrl: `http://127.0.0.1:${stack.port('storage')}`,
    token: TEST_STORAGE_TOKEN,
    directReads: new PresignedUrlReader({ idleTimeoutMs: 10_000 }),
  });
  afterAll(() => direct.close());

  const readsOpened = async () => {
    const text = await (await fetch(`http://127.0.0.1:${stack.port('storage')}/metrics`)).text();
    const count = (way: string) =>
      Number(new RegExp(`^uhp_storage_reads_total\\{[^}]*way="${way}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return { relayed: count('relayed'), signed: count('signed_url') };
  };

  it('reads whole objects and ranges, many at once, with no byte through the storage service', async () => {
    const data = randomBytes(6 * MiB + 7);
    const k = key();
    await client.put(k, Readable.from([data]), { maxBytes: 64 * MiB });
    const before = await readsOpened();
    const ranges = Array.from({ length: 12 }, (_, i) => ({ start: i * 500_000, end: i * 500_000 + 99_999 + i }));
    const [whole, ...parts] = await Promise.all([direct.get(k), ...ranges.map((range) => direct.get(k, range))]);
    expect(whole.status).toBe(200);
    expect(whole.contentLength).toBe(data.length);
    expect(sha(await drain(whole.body))).toBe(sha(data));
    for (const [i, part] of parts.entries()) {
      expect(part.status).toBe(206);
      expect(part.contentRange).toBe(`bytes ${ranges[i].start}-${ranges[i].end}/${data.length}`);
      expect((await drain(part.body)).equals(data.subarray(ranges[i].start, ranges[i].end + 1))).toBe(true);
    }
    expect(await readsOpened()).toEqual({ relayed: before.relayed, signed: before.signed + 13 });
    await client.delete(k);
    await expect(direct.get(k)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('signs only for the storage token and only keys of its own form', async () => {
    const signed = (path: string, token?: string) =>
      fetch(`http://127.0.0.1:${stack.port('storage')}${path}`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
    expect((await signed(readUrlPath(key()))).status).toBe(401);
    expect((await signed(readUrlPath(key()), 'wrong')).status).toBe(401);
    expect((await signed(readUrlPath('../etc/passwd'), TEST_STORAGE_TOKEN)).status).toBe(404);
    const answer = await signed(readUrlPath('objects/some-key'), TEST_STORAGE_TOKEN);
    expect(answer.status).toBe(200);
    const { url, expiresAt } = (await answer.json()) as { url: string; expiresAt: string };
    expect(new URL(url).pathname).toBe(`/${TEST_BUCKET}/objects/some-key`);
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('300');
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(290_000);
    // The URL reads, and only reads: S3 refuses the same signature for a write.
    expect((await fetch(url, { method: 'PUT', body: 'x' })).status).toBe(403);
  });
});

describe('resumable uploads: blocks of a multipart upload kept open across requests', () => {
  it('writes blocks of 5 to 64 MiB; joins exact blocks only when they are all the upload holds, else every part, each block in its place', async () => {
    const k = `uploads/${randomUUID()}`;
    const uploadId = await client.openMultipart(k, 'application/octet-stream');
    // Each block is one S3 part, sent once its body has ended (20 MiB: two buffers, one part).
    const sizes = [5 * MiB, 20 * MiB, 64 * MiB, 33 * MiB];
    const blocks = sizes.map((size) => randomBytes(size));
    const receipts = await Promise.all(
      blocks.map((data, block) =>
        client.putBlock(k, uploadId, block, Readable.from([data.subarray(0, 1000), data.subarray(1000)]), {
          maxBytes: 64 * MiB,
        }),
      ),
    );
    receipts.forEach((receipt, block) =>
      expect(receipt).toMatchObject({ bytes: sizes[block], sha256: sha(blocks[block]) }),
    );
    const { rows } = await db.query(
      `SELECT p.part_number AS n, p.bytes FROM s3_multipart_parts p JOIN s3_multipart_uploads m ON m.id = p.multipart_id
        WHERE m.s3_upload_id = $1 ORDER BY p.part_number`,
      [uploadId],
    );
    // Block n is the one S3 part 4n+1, whole.
    expect(rows.map((row) => [row.n, Number(row.bytes)])).toEqual(sizes.map((size, block) => [4 * block + 1, size]));

    // Too small, too large: refused, and nothing of them reaches S3 (the too-large one is cut before its end).
    await expect(
      client.putBlock(k, uploadId, 7, Readable.from([randomBytes(MiB)]), { maxBytes: 64 * MiB }),
    ).rejects.toMatchObject({
      code: 'invalid_multipart',
    });
    await expect(
      client.putBlock(k, uploadId, 8, Readable.from([randomBytes(64 * MiB + 1)]), { maxBytes: 64 * MiB }),
    ).rejects.toMatchObject({ code: 'file_too_large' });

    // Ceph's S3 completes a multipart upload with all of its parts or none: exact blocks are refused
    // while another block (1) is there, and the upload stays as it was.
    const tail = key();
    await client.put(tail, Readable.from([Buffer.from('the end')]), { maxBytes: 100 });
    await expect(client.completeBlocks(k, uploadId, [0, 2, 3], tail)).rejects.toMatchObject({
      code: 'upload_conflict',
    });
    // 'all': every part, and where each block landed; the refused blocks left none.
    const all = await client.completeBlocks(k, uploadId, 'all');
    expect(all.blocks.map(({ block, offset, bytes }) => [block, offset, bytes])).toEqual([
      [0, 0, 5 * MiB],
      [1, 5 * MiB, 20 * MiB],
      [2, 25 * MiB, 64 * MiB],
      [3, 89 * MiB, 33 * MiB],
    ]);
    const staged = await client.get(k, { start: 25 * MiB, end: 89 * MiB - 1 });
    expect(sha(await drain(staged.body))).toBe(sha(blocks[2]));
    expect(await unfinishedUploads()).not.toContainEqual(expect.stringMatching(new RegExp(`^${k}#`)));
    expect(await count('SELECT count(*) FROM s3_multipart_uploads WHERE s3_upload_id = $1', [uploadId])).toBe(0);
    // A closed upload takes no more blocks; aborting it again is fine.
    await expect(
      client.putBlock(k, uploadId, 9, Readable.from([randomBytes(6 * MiB)]), { maxBytes: 64 * MiB }),
    ).rejects.toMatchObject({ code: 'not_found' });
    await client.abortMultipart(k, uploadId);

    // Exact blocks (all there is) and a small last object: joined as they are, nothing copied but the tail.
    const exact = `uploads/${randomUUID()}`;
    const exactId = await client.openMultipart(exact, 'application/octet-stream');
    await client.putBlock(exact, exactId, 4, Readable.from([blocks[1]]), { maxBytes: 64 * MiB });
    await client.putBlock(exact, exactId, 6, Readable.from([blocks[0]]), { maxBytes: 64 * MiB });
    const done = await client.completeBlocks(exact, exactId, [4, 6], tail);
    const expected = Buffer.concat([blocks[1], blocks[0], Buffer.from('the end')]);
    expect(done.bytes).toBe(expected.length);
    expect(await client.hash(exact)).toMatchObject({ bytes: expected.length, sha256: sha(expected) });
    for (const each of [k, exact, tail]) await client.delete(each);
  });

  it('composes byte ranges of objects, by part copies or streamed, and aborts an open upload with its blocks', async () => {
    const a = randomBytes(12 * MiB);
    const ka = key();
    await client.put(ka, Readable.from([a]), { maxBytes: 64 * MiB });
    const k = key();
    // 6 MiB then 1 byte then 5 MiB: the middle range is too small to be copied, so it streams.
    const sources = [
      { key: ka, start: 6 * MiB, end: 12 * MiB - 1 },
      { key: ka, start: 0, end: 0 },
      { key: ka, start: MiB, end: 6 * MiB - 1 },
    ];
    const composed = await client.compose(k, sources);
    const expected = Buffer.concat([a.subarray(6 * MiB), a.subarray(0, 1), a.subarray(MiB, 6 * MiB)]);
    expect(composed).toMatchObject({ bytes: expected.length, sha256: sha(expected) });
    const byCopy = key();
    const copied = await client.compose(byCopy, [sources[0], sources[2]]);
    expect(copied.sha256).toBe(sha(Buffer.concat([a.subarray(6 * MiB), a.subarray(MiB, 6 * MiB)])));

    const open = `uploads/${randomUUID()}`;
    const uploadId = await client.openMultipart(open, 'application/octet-stream');
    await client.putBlock(open, uploadId, 0, Readable.from([randomBytes(6 * MiB)]), { maxBytes: 64 * MiB });
    await client.abortMultipart(open, uploadId);
    expect(await unfinishedUploads()).not.toContainEqual(expect.stringMatching(new RegExp(`^${open}#`)));
    expect(await count('SELECT count(*) FROM s3_multipart_uploads WHERE s3_upload_id = $1', [uploadId])).toBe(0);
    for (const each of [ka, k, byCopy]) await client.delete(each);
  });
});

describe('the storage sweeper', () => {
  // Its own storage process whose horizon is 2 s, sweeping every half second.
  const sweeping = new Stack(testPort(19580), {
    STORAGE_ABANDONED_UPLOAD_SECONDS: '2',
    STORAGE_ORPHAN_UPLOAD_SECONDS: '1',
    STORAGE_SWEEP_INTERVAL_MS: '500',
    S3_PART_SIZE_BYTES: String(5 * MiB),
  });
  beforeAll(() => sweeping.start(['storage']));
  afterAll(() => sweeping.stop());

  it('never aborts a multipart upload still receiving parts, and aborts it once it has been idle past the horizon', async () => {
    const key = `objects/${randomUUID()}`;
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: TEST_BUCKET, Key: key }));
    const uploadId = created.UploadId!;
    const live = () => unfinishedUploads().then((uploads) => uploads.includes(`${key}#${uploadId}`));
    // A slow but live upload: a part every second for five seconds, well past the 2 s horizon.
    for (let part = 1; part <= 5; part++) {
      await s3.send(
        new UploadPartCommand({
          Bucket: TEST_BUCKET,
          Key: key,
          UploadId: uploadId,
          PartNumber: part,
          Body: randomBytes(5 * MiB),
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await live()).toBe(true);
    }
    await pollUntil(async () => !(await live()), 'idle upload aborted', 15_000);
  });

  it('never aborts an upload this process is streaming, however slowly', async () => {
    const sweepingClient = new StorageClient({
      baseUrl: `http://127.0.0.1:${sweeping.port('storage')}`,
      token: TEST_STORAGE_TOKEN,
    });
    const k = key();
    const slow = new Readable({ read() {} });
    const put = sweepingClient.put(k, slow, { maxBytes: 64 * MiB });
    // 6 MiB in one go opens the multipart upload with its first part; then a trickle for 4 s.
    slow.push(randomBytes(6 * MiB));
    for (let i = 0; i < 8; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      slow.push(randomBytes(1024));
    }
    slow.push(null);
    expect((await put).bytes).toBe(6 * MiB + 8 * 1024);
    expect(await objectExists(k)).toBe(true);
    await sweepingClient.delete(k);
    sweepingClient.close();
  });
});

describe('the journal of multipart uploads in Postgres', () => {
  const journalRow = async (k: string) =>
    (
      await db.query(
        `SELECT m.s3_upload_id AS "uploadId", p.part_number AS "partNumber", p.bytes, p.etag
           FROM s3_multipart_uploads m LEFT JOIN s3_multipart_parts p ON p.multipart_id = m.id
          WHERE m.storage_key = $1 ORDER BY p.part_number`,
        [k],
      )
    ).rows;

  it('records each multipart upload storage opens, with its parts, sizes and ETags, until it is done', async () => {
    const k = key();
    const slow = new Readable({ read() {} });
    const put = client.put(k, slow, { maxBytes: 64 * MiB });
    slow.push(randomBytes(6 * MiB));
    await pollUntil(
      async () => (await journalRow(k)).some((row) => row.partNumber === 1),
      'the open upload and its first part recorded',
      15_000,
    );
    const rows = await journalRow(k);
    expect(rows[0]).toMatchObject({ partNumber: 1, bytes: String(5 * MiB) });
    expect(rows[0].etag).toMatch(/^"?[0-9a-f-]+"?$/);
    expect((await unfinishedUploads()).some((upload) => upload.endsWith(`#${rows[0].uploadId}`))).toBe(true);
    slow.push(null);
    await put;
    expect(await journalRow(k)).toEqual([]);
    await client.delete(k);
  });
});

describe('the storage sweeper judging from the journal', () => {
  const sweeping = new Stack(testPort(19680), {
    STORAGE_ABANDONED_UPLOAD_SECONDS: '4',
    STORAGE_ORPHAN_UPLOAD_SECONDS: '1',
    STORAGE_SWEEP_INTERVAL_MS: '500',
  });
  beforeAll(() => sweeping.start(['storage']));
  afterAll(() => sweeping.stop());

  async function openRecorded(k: string): Promise<string> {
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: TEST_BUCKET, Key: k }));
    await db.query(
      `INSERT INTO s3_multipart_uploads (id, storage_key, s3_upload_id) VALUES (gen_random_uuid(), $1, $2)`,
      [k, created.UploadId],
    );
    return created.UploadId!;
  }
  const isOpen = async (k: string, uploadId: string) => (await unfinishedUploads()).includes(`${k}#${uploadId}`);

  it('aborts an upload whose owner object is gone, and leaves one whose owner is uploading while it stays active', async () => {
    const orphan = key();
    const live = key();
    const orphanId = await openRecorded(orphan);
    const liveId = await openRecorded(live);
    await db.query(
      `INSERT INTO stored_objects (id, principal_id, storage_key, status) VALUES (gen_random_uuid(), gen_random_uuid(), $1, 'UPLOADING')`,
      [live],
    );
    const touch = setInterval(
      () => void db.query(`UPDATE s3_multipart_uploads SET last_activity_at = now() WHERE storage_key = $1`, [live]),
      300,
    );
    try {
      await pollUntil(
        async () =>
          !(await isOpen(orphan, orphanId)) &&
          (await count(`SELECT count(*) FROM s3_multipart_uploads WHERE storage_key = $1`, [orphan])) === 0,
        'the orphaned upload aborted and its row gone',
        15_000,
      );
      // Well past the orphan horizon and older than the idle one since it started: still open, as it is active.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect(await isOpen(live, liveId)).toBe(true);
    } finally {
      clearInterval(touch);
    }
    await pollUntil(
      async () => !(await isOpen(live, liveId)),
      'the live upload aborted once idle past the horizon',
      20_000,
    );
    await db.query(`DELETE FROM stored_objects WHERE storage_key = $1`, [live]);
  });
});
