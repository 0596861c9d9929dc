import { ListPartsCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { firstPartNumberOf } from '@app/contracts';
import { openConsistency } from '@app/db';
import { BucketInventoryClient } from '../../apps/storage/src/doctor/bucket-inventory.client';
import { horizonsOf } from '../../apps/storage/src/doctor/consistency-checks';
import { DoctorService } from '../../apps/storage/src/doctor/doctor.service';
import { doctorConfigFor } from '../support/doctor';
import { randomBytes } from 'node:crypto';
import type { ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CLOSE, MULTIPART_TYPE, partHead, rawRequest, type Who } from '../support/api';
import { db } from '../support/db';
import { KEYS, TEST_BUCKET, TEST_DATABASE_URL, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { s3 } from '../support/s3';
import { Stack } from '../support/stack';

/**
 * Parts of resumable uploads are admitted against every cap before a byte reaches S3 (issue 37): the
 * bucket's own multipart listing is what each test checks, never only the answers.
 */
const MiB = 1024 * 1024;

/** Another principal than the shared stack's: the bytes its pending uploads hold are this file's alone. */
const CAROL = `sk_test_carol_${randomBytes(12).toString('hex')}`;
const CAROL_NAME = `carol${randomBytes(4).toString('hex')}`;
const asCarol = { who: 'anon' as Who, headers: { authorization: `Bearer ${CAROL}` } };

type Caller = { who?: Who; base?: string; headers?: Record<string, string> };
/** Every upload this file creates, cancelled at the end: no multipart upload is left open in the bucket. */
const created: { id: string; caller: Caller }[] = [];

async function newUpload(bytes: number, caller: Caller = {}) {
  const res = await api('POST', '/v1/uploads', {
    ...caller,
    json: { bytes, filename: 'a.bin', purpose: 'user_data', mime_type: 'application/octet-stream' },
  });
  expect(res.status, res.body.toString()).toBe(200);
  created.push({ id: res.json.id, caller });
  return res.json.id as string;
}

/** Cancels what `created` holds of the stack at `base` (the shared stack's when undefined) and is still pending. */
async function cancelCreated(base?: string): Promise<void> {
  for (const { id, caller } of created.filter((upload) => upload.caller.base === base))
    await api('POST', `/v1/uploads/${id}/cancel`, caller);
}

afterAll(() => cancelCreated());

/** One part as the SDK sends it (multipart, field `data`), with its Content-Length declared unless `chunked`. */
function sendPart(
  uploadId: string,
  data: Buffer,
  opts: {
    who?: Who;
    headers?: Record<string, string>;
    base?: string;
    chunked?: boolean;
    /** What follows the data: the form's closing boundary unless a test breaks the form. */
    tail?: string;
    write?: (req: ClientRequest, body: Buffer) => void;
  } = {},
) {
  const body = Buffer.concat([Buffer.from(partHead('data', 'part')), data, Buffer.from(opts.tail ?? CLOSE)]);
  return rawRequest(`/v1/uploads/${uploadId}/parts`, {
    who: opts.who,
    base: opts.base,
    headers: {
      'content-type': MULTIPART_TYPE,
      ...(opts.chunked ? {} : { 'content-length': body.length }),
      ...(opts.headers ?? {}),
    },
    write: opts.write ? (req) => opts.write!(req, body) : (req) => req.end(body),
  });
}

/** What the bucket itself holds in the upload's multipart upload: [part number, bytes]. */
async function bucketParts(uploadId: string): Promise<[number, number][]> {
  const { rows } = await db.query('SELECT storage_key, s3_upload_id FROM uploads WHERE id = $1', [uploadId]);
  const { storage_key: key, s3_upload_id: s3UploadId } = rows[0];
  const listed = await s3.send(new ListPartsCommand({ Bucket: TEST_BUCKET, Key: key, UploadId: s3UploadId }));
  return (listed.Parts ?? []).map((part) => [part.PartNumber!, Number(part.Size)]);
}

async function keptParts(uploadId: string): Promise<{ id: string; bytes: number; block: number | null }[]> {
  const { rows } = await db.query(
    'SELECT id, bytes::int AS bytes, block FROM upload_parts WHERE upload_id = $1 ORDER BY seq',
    [uploadId],
  );
  return rows;
}

async function reservations(uploadId: string): Promise<number> {
  const { rows } = await db.query('SELECT count(*)::int AS n FROM upload_reservations WHERE upload_id = $1', [
    uploadId,
  ]);
  return rows[0].n;
}

const TUS_NAME = `filename ${Buffer.from('a.bin').toString('base64')}`;
const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

describe('parts are admitted before their bytes reach S3', () => {
  it('parts far over twice the upload are refused from their Content-Length, and S3 holds nothing of them', async () => {
    const id = await newUpload(5 * MiB);
    for (let i = 0; i < 4; i++) {
      const res = await sendPart(id, randomBytes(12 * MiB));
      expect(res.status, res.body).toBe(413);
      expect(JSON.parse(res.body).error.code).toBe('file_too_large');
    }
    expect(await bucketParts(id)).toEqual([]);
    expect(await keptParts(id)).toEqual([]);
    expect(await reservations(id)).toBe(0);
  });

  it('eight parallel 6 MiB parts of a 6 MiB upload: at most twice its bytes is admitted, and S3 holds exactly the kept parts', async () => {
    const id = await newUpload(6 * MiB);
    const data = randomBytes(6 * MiB);
    const answers = await Promise.all(Array.from({ length: 8 }, () => sendPart(id, data)));
    const statuses = answers.map((answer) => answer.status);
    expect(
      statuses.every((status) => status === 200 || status === 413),
      statuses.join(','),
    ).toBe(true);
    const kept = await keptParts(id);
    expect(kept.length).toBe(statuses.filter((status) => status === 200).length);
    expect(kept.length).toBeGreaterThanOrEqual(1);
    expect(sum(kept.map((part) => part.bytes))).toBeLessThanOrEqual(12 * MiB);
    // Each kept block is one S3 part; no refused part left a byte.
    const listed = await bucketParts(id);
    expect(listed.length).toBe(kept.length);
    expect(sum(listed.map(([, bytes]) => bytes))).toBe(sum(kept.map((part) => part.bytes)));
    expect(await reservations(id)).toBe(0);
    const done = await api('POST', `/v1/uploads/${id}/complete`, { json: { part_ids: [kept[0].id] } });
    expect(done.status, done.body.toString()).toBe(200);
    expect(done.json.file.bytes).toBe(6 * MiB);
  });

  it('a chunked part is cut at the room left, with nothing kept', async () => {
    const id = await newUpload(3 * MiB);
    const first = await sendPart(id, randomBytes(3 * MiB), { chunked: true });
    expect(first.status, first.body).toBe(200);
    const over = await sendPart(id, randomBytes(4 * MiB), { chunked: true });
    expect(over.status, over.body).toBe(413);
    expect((await keptParts(id)).map((part) => part.bytes)).toEqual([3 * MiB]);
    expect(await reservations(id)).toBe(0);
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM stored_objects o JOIN upload_parts p ON p.object_id = o.id WHERE p.upload_id = $1`,
      [id],
    );
    expect(rows[0].n).toBe(1);
  });

  it('a block cut off mid-way, or whose form is broken after its bytes, leaves nothing in S3', async () => {
    const id = await newUpload(8 * MiB);
    const data = randomBytes(8 * MiB);
    // The client sends 7 of 8 MiB, then goes away.
    await sendPart(id, data, {
      write: (req, body) => {
        req.write(body.subarray(0, 7 * MiB));
        setTimeout(() => req.destroy(), 300);
      },
    }).catch(() => undefined);
    // Every byte arrives, but the form never closes: the request is malformed after the block's bytes.
    const broken = await sendPart(id, data, { tail: '\r\n--not-the-boundary' });
    expect(broken.status, broken.body).toBe(400);
    await pollUntil(async () => (await reservations(id)) === 0 || null, 'the reservations to go', 10_000);
    expect(await bucketParts(id)).toEqual([]);
    expect(await keptParts(id)).toEqual([]);
    // The upload goes on: its whole room is still free.
    const whole = await sendPart(id, data);
    expect(whole.status, whole.body).toBe(200);
    expect((await bucketParts(id)).map(([, bytes]) => bytes)).toEqual([8 * MiB]);
  });
});

describe('reservations a dead gateway left', () => {
  it('the sweep holds one whose block the storage journal shows S3 took, and drops one whose block never came', async () => {
    const id = await newUpload(6 * MiB);
    const { rows } = await db.query(
      `SELECT u.principal_id, u.storage_key, u.s3_upload_id, m.id AS journal_id FROM uploads u
         JOIN s3_multipart_uploads m ON m.s3_upload_id = u.s3_upload_id WHERE u.id = $1`,
      [id],
    );
    const upload = rows[0];
    // Block 3 reached S3 (and the journal) before its gateway died; block 4's request died before.
    const written = await s3.send(
      new UploadPartCommand({
        Bucket: TEST_BUCKET,
        Key: upload.storage_key,
        UploadId: upload.s3_upload_id,
        PartNumber: firstPartNumberOf(3),
        Body: randomBytes(5 * MiB),
      }),
    );
    await db.query(`INSERT INTO s3_multipart_parts (multipart_id, part_number, bytes, etag) VALUES ($1, $2, $3, $4)`, [
      upload.journal_id,
      firstPartNumberOf(3),
      5 * MiB,
      written.ETag,
    ]);
    for (const block of [3, 4])
      await db.query(
        `INSERT INTO upload_reservations (id, upload_id, principal_id, bytes, block, expires_at)
         VALUES (gen_random_uuid(), $1, $2, $3, $4, now() - interval '1 second')`,
        [id, upload.principal_id, 6 * MiB, block],
      );
    const left = async () =>
      (await db.query('SELECT block, held FROM upload_reservations WHERE upload_id = $1 ORDER BY block', [id])).rows;
    await pollUntil(async () => (await left()).length === 1 || null, 'the sweep to settle the reservations');
    expect(await left()).toEqual([{ block: 3, held: true }]);
    // Held at the 5 MiB S3 took, block 3 counts: 7 of the 12 MiB the upload may hold are left.
    expect((await sendPart(id, randomBytes(8 * MiB))).status).toBe(413);
    expect((await sendPart(id, randomBytes(6 * MiB))).status).toBe(200);
    expect((await api('POST', `/v1/uploads/${id}/cancel`)).status).toBe(200);
  });
});

describe('the consistency checker and parts nothing accounts for', () => {
  it('reports a block S3 holds that no part or reservation accounts for; the repair holds it against the caps', async () => {
    const id = await newUpload(6 * MiB);
    const { rows } = await db.query('SELECT storage_key, s3_upload_id FROM uploads WHERE id = $1', [id]);
    // A block written behind the service's back (as parts were before admission existed).
    await s3.send(
      new UploadPartCommand({
        Bucket: TEST_BUCKET,
        Key: rows[0].storage_key,
        UploadId: rows[0].s3_upload_id,
        PartNumber: firstPartNumberOf(7),
        Body: randomBytes(7 * MiB),
      }),
    );
    const config = doctorConfigFor(TEST_DATABASE_URL, TEST_BUCKET);
    const database = openConsistency(config.DATABASE_URL);
    const bucket = new BucketInventoryClient(config);
    try {
      const doctor = new DoctorService(database.consistency, database.objects, bucket);
      const horizons = horizonsOf(new Date(), {
        graceSeconds: 0,
        abandonedUploadSeconds: 3600,
        staleUploadSeconds: 3600,
      });
      const mine = async () =>
        (await doctor.check(horizons)).filter((f) => f.kind === 'stray_upload_parts' && f.uploadId === id);
      const found = await mine();
      expect(found).toMatchObject([
        { kind: 'stray_upload_parts', blocks: [{ block: 7, bytes: 7 * MiB }], bytes: 7 * MiB },
      ]);
      expect((await doctor.repair(found, horizons))[0]).toMatchObject({ repaired: true });
      expect(await mine()).toEqual([]);
      // Held, the 7 MiB count: a 6 MiB part no longer fits in the 12 MiB the upload may hold.
      expect((await sendPart(id, randomBytes(6 * MiB))).status).toBe(413);
      expect((await sendPart(id, randomBytes(5 * MiB))).status).toBe(200);
      // Cancelling the upload takes the held block with its multipart upload.
      expect((await api('POST', `/v1/uploads/${id}/cancel`)).status).toBe(200);
      expect(await reservations(id)).toBe(0);
    } finally {
      bucket.destroy();
      await database.close();
    }
  });
});

describe('an upload answers only on its own protocol', () => {
  it('a tus upload is 404 on every /v1/uploads route, and an Uploads API upload on every /v1/tus route', async () => {
    const created = await rawRequest('/v1/tus', {
      headers: { 'tus-resumable': '1.0.0', 'upload-length': String(6 * MiB), 'upload-metadata': TUS_NAME },
      write: (req) => req.end(),
    });
    expect(created.status, created.body).toBe(201);
    const tusId = String(created.headers.location).split('/').pop()!;
    const tusPatch = (offset: number, data: Buffer) =>
      rawRequest(`/v1/tus/${tusId}`, {
        method: 'PATCH',
        headers: {
          'tus-resumable': '1.0.0',
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
          'content-length': data.length,
        },
        write: (req) => req.end(data),
      });
    const data = randomBytes(6 * MiB);
    expect((await tusPatch(0, data.subarray(0, MiB))).status).toBe(204);
    const [part] = await keptParts(tusId);
    const notFound = (res: { status: number }) => expect(res.status).toBe(404);
    notFound(await api('GET', `/v1/uploads/${tusId}`));
    notFound(await api('GET', `/v1/uploads/${tusId}/parts`));
    notFound(await sendPart(tusId, randomBytes(1024)));
    notFound(await api('POST', `/v1/uploads/${tusId}/complete`, { json: { part_ids: [part.id] } }));
    notFound(await api('POST', `/v1/uploads/${tusId}/cancel`));
    expect(await keptParts(tusId)).toEqual([part]);
    // Untouched by all that, the tus upload goes on to its file.
    const rest = await tusPatch(MiB, data.subarray(MiB));
    expect(rest.status, rest.body).toBe(204);
    expect(rest.headers['x-file-id']).toMatch(/^file_/);

    const openaiId = await newUpload(1024);
    for (const method of ['HEAD', 'PATCH', 'DELETE']) {
      const res = await rawRequest(`/v1/tus/${openaiId}`, {
        method,
        headers: {
          'tus-resumable': '1.0.0',
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
        },
        write: (req) => req.end(method === 'PATCH' ? Buffer.alloc(1024) : undefined),
      });
      expect(res.status, `${method} ${res.body}`).toBe(404);
    }
    expect((await api('GET', `/v1/uploads/${openaiId}`)).json.status).toBe('pending');
  });

  it('a tus PATCH longer than the room left is refused before its bytes, and the upload goes on', async () => {
    const created = await rawRequest('/v1/tus', {
      headers: { 'tus-resumable': '1.0.0', 'upload-length': String(MiB), 'upload-metadata': TUS_NAME },
      write: (req) => req.end(),
    });
    const location = `/v1/tus/${String(created.headers.location).split('/').pop()}`;
    const patch = (data: Buffer, chunked = false) =>
      rawRequest(location, {
        method: 'PATCH',
        headers: {
          'tus-resumable': '1.0.0',
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
          ...(chunked ? {} : { 'content-length': data.length }),
        },
        write: (req) => req.end(data),
      });
    expect((await patch(randomBytes(MiB + 1))).status).toBe(413);
    expect((await patch(randomBytes(MiB + 1), true)).status).toBe(413);
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM upload_parts WHERE upload_id = $1`, [
      location.split('/').pop(),
    ]);
    expect(rows[0].n).toBe(0);
    const done = await patch(randomBytes(MiB));
    expect(done.status, done.body).toBe(204);
    expect(done.headers['x-file-id']).toMatch(/^file_/);
  });
});

describe('the bytes a principal’s pending uploads hold', () => {
  const stack = new Stack(testPort(20280), {
    UHP_API_KEYS: `alice=${KEYS.alice},bob=${KEYS.bob},${CAROL_NAME}=${CAROL}`,
    UHP_MAX_PENDING_UPLOAD_BYTES: String(16 * MiB),
    // The pending bytes must hold one largest file.
    UHP_MAX_FILE_BYTES: String(16 * MiB),
  });
  beforeAll(() => stack.start(), 120_000);
  afterAll(async () => {
    await cancelCreated(stack.baseUrl);
    await stack.stop();
  });

  it('parallel parts of many uploads never together pass UHP_MAX_PENDING_UPLOAD_BYTES', async () => {
    const base = stack.baseUrl;
    const limits = (await (await fetch(`${base}/v1/limits`)).json()) as { per_principal: Record<string, number> };
    expect(limits.per_principal.pending_upload_bytes).toBe(16 * MiB);
    const ids = await Promise.all(Array.from({ length: 6 }, () => newUpload(6 * MiB, { base, ...asCarol })));
    const data = randomBytes(6 * MiB);
    const answers = await Promise.all(ids.map((id) => sendPart(id, data, { base, ...asCarol })));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200).length, statuses.join(',')).toBe(2);
    for (const answer of answers.filter((a) => a.status !== 200)) {
      expect(answer.status).toBe(429);
      expect(JSON.parse(answer.body).error.code).toBe('rate_limited');
      expect(answer.headers['retry-after']).toBe('30');
    }
    const held = sum(await Promise.all(ids.map(async (id) => sum((await bucketParts(id)).map(([, b]) => b)))));
    expect(held).toBe(12 * MiB);
    // Cancelling one frees its room for another's part.
    const kept = ids.filter((_, index) => statuses[index] === 200);
    const waiting = ids.filter((_, index) => statuses[index] !== 200);
    expect((await api('POST', `/v1/uploads/${kept[0]}/cancel`, { base, ...asCarol })).status).toBe(200);
    expect((await sendPart(waiting[0], data, { base, ...asCarol })).status).toBe(200);
  });
});
