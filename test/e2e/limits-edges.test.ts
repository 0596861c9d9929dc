import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse, fileForm } from '../support/api';
import { db, dbNow } from '../support/db';
import { KEYS, ownQueues, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { objectKeys, unfinishedUploads } from '../support/s3';
import { Stack } from '../support/stack';

/**
 * Every maximum GET /v1/limits advertises is accepted at exactly that size and refused one byte above,
 * at small configured limits (the defaults, 5 GiB and more, cannot be sent here). The file limit sits below
 * the configured inline limit, so the inline limit served is the file limit; the JSON body limit is
 * configured explicitly above its floor, so it is served as given.
 */
const MiB = 1024 * 1024;
const FILE_LIMIT = 6 * MiB;
const CONFIGURED = {
  UHP_MAX_FILE_BYTES: String(FILE_LIMIT),
  UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(MiB),
  UHP_MAX_INLINE_FILE_BYTES: String(8 * MiB),
  UHP_MAX_REQUEST_BYTES: String(9 * MiB),
  ARCHIVE_MAX_BYTES: '300000',
  // The pending-upload bytes derive from the file limit; other test files' pending uploads share the database.
  UHP_MAX_PENDING_UPLOAD_BYTES: String(1024 ** 4),
  ARCHIVE_WAIT_MS: '0',
  // Its own queues: only this stack's worker, with this archive limit, builds its archives.
  ...ownQueues('limits-edges'),
  WORKER_QUEUES: 'archive,purge',
  PREVIEW_ENABLED: 'false',
  // The burst below sends every edge at once; the per-principal concurrency limits are not what it tests.
  UHP_MAX_CONCURRENT_UPLOADS: '64',
};

/** What the limits served must be for CONFIGURED: each the smallest of the limits bounding it. */
const EXPECTED_LIMITS = {
  max_file_bytes: MiB,
  max_inline_file_bytes: FILE_LIMIT,
  max_request_bytes: 9 * MiB,
  max_upload_bytes: FILE_LIMIT,
  max_upload_part_bytes: FILE_LIMIT,
  archive: { formats: ['zip'], max_bytes: 300_000 },
};

type Limits = typeof EXPECTED_LIMITS;
type Outcome = 'accepted' | { status: number; code: string };

const refused = (res: { status: number; json?: any }): Outcome => ({
  status: res.status,
  code: res.json?.error?.code ?? '',
});

interface Edge {
  name: string;
  /** The advertised maximum this row drives. */
  maximum(limits: Limits): number;
  /** How an attempt of `bytes` one byte over is refused. */
  refusal: { status: number; code: string };
  /** Makes something of exactly `bytes` this way: 'accepted' once it is kept, served or answered. */
  attempt(base: string, bytes: number): Promise<Outcome>;
}

const json = (base: string, path: string, body: unknown) => api('POST', path, { base, json: body });

/** Creates an Uploads API upload of `bytes`, sends its data as one part, completes it. */
async function uploadInOnePart(base: string, bytes: number, partBytes = bytes): Promise<Outcome> {
  const created = await json(base, '/v1/uploads', {
    filename: 'edge.bin',
    purpose: 'user_data',
    bytes,
    mime_type: 'application/octet-stream',
  });
  if (created.status !== 200) return refused(created);
  const form = new FormData();
  form.append('data', new Blob([randomBytes(partBytes)]), 'part');
  const part = await api('POST', `/v1/uploads/${created.json.id}/parts`, { base, form });
  if (part.status !== 200) {
    // As a client would: an upload it cannot finish is cancelled, so it holds no open multipart upload.
    expect((await json(base, `/v1/uploads/${created.json.id}/cancel`, {})).status).toBe(200);
    return refused(part);
  }
  const completed = await json(base, `/v1/uploads/${created.json.id}/complete`, { part_ids: [part.json.id] });
  if (completed.status !== 200) return refused(completed);
  expect(completed.json.file.bytes).toBe(bytes);
  return 'accepted';
}

/** GET a session's archive until it is no longer building. */
async function finishedArchive(base: string, sessionId: string): Promise<ApiResponse> {
  return (await pollUntil(
    async () => {
      const res = await api('GET', `/v1/sessions/${sessionId}/files/archive`, { base });
      return res.status === 202 ? null : res;
    },
    'the archive build finished or failed for good',
    120_000,
    500,
  ))!;
}

/** A session holding one artifact of `bytes` bytes, always under the same name (so ZIP overhead is constant). */
async function sessionWithArtifact(base: string, bytes: number): Promise<string> {
  const session = (await json(base, '/v1/sessions', {})).json;
  const res = await api('POST', `/v1/containers/${session.container_id}/files`, {
    base,
    form: fileForm('edge-artifact.bin', randomBytes(bytes)),
  });
  expect(res.status).toBe(200);
  return session.id;
}

/** What a ZIP holds besides its one entry's bytes (headers, name, central directory), measured once. */
let zipOverhead: number | undefined;
async function zipOverheadOf(base: string): Promise<number> {
  if (zipOverhead === undefined) {
    const probe = await finishedArchive(base, await sessionWithArtifact(base, 1000));
    expect(probe.status).toBe(200);
    zipOverhead = probe.body.length - 1000;
  }
  return zipOverhead;
}

const EDGES: Edge[] = [
  {
    name: 'an inline file (input_file file_data in POST /v1/responses)',
    maximum: (limits) => limits.max_inline_file_bytes,
    refusal: { status: 413, code: 'file_too_large' },
    attempt: async (base, bytes) => {
      const res = await json(base, '/v1/responses', {
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Summarise.' },
              {
                type: 'input_file',
                filename: `inline-${randomUUID()}.bin`,
                file_data: `data:application/octet-stream;base64,${randomBytes(bytes).toString('base64')}`,
              },
            ],
          },
        ],
      });
      if (res.status !== 200) return refused(res);
      expect(res.json.status).toBe('completed');
      return 'accepted';
    },
  },
  {
    name: 'a file in one request (POST /v1/files)',
    maximum: (limits) => limits.max_file_bytes,
    refusal: { status: 413, code: 'file_too_large' },
    attempt: async (base, bytes) => {
      const res = await api('POST', '/v1/files', { base, form: fileForm('edge.bin', randomBytes(bytes)) });
      if (res.status !== 200) return refused(res);
      expect(res.json.bytes).toBe(bytes);
      return 'accepted';
    },
  },
  {
    name: 'an upload (POST /v1/uploads bytes, its part, complete)',
    maximum: (limits) => limits.max_upload_bytes,
    refusal: { status: 413, code: 'file_too_large' },
    attempt: (base, bytes) => uploadInOnePart(base, bytes),
  },
  {
    name: 'an upload (tus Upload-Length, one PATCH)',
    maximum: (limits) => limits.max_upload_bytes,
    refusal: { status: 413, code: 'file_too_large' },
    attempt: async (base, bytes) => {
      const headers = { authorization: `Bearer ${KEYS.alice}`, 'tus-resumable': '1.0.0' };
      const created = await fetch(`${base}/v1/tus`, {
        method: 'POST',
        headers: {
          ...headers,
          'upload-length': String(bytes),
          'upload-metadata': `filename ${Buffer.from('edge.bin').toString('base64')}`,
        },
      });
      if (created.status !== 201) return refused({ status: created.status, json: await created.json() });
      const patched = await fetch(created.headers.get('location')!, {
        method: 'PATCH',
        headers: { ...headers, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
        body: randomBytes(bytes),
      });
      expect(patched.status).toBe(204);
      const file = await api('GET', `/v1/files/${patched.headers.get('x-file-id')}`, { base });
      expect(file.json.bytes).toBe(bytes);
      return 'accepted';
    },
  },
  {
    name: 'an upload part (POST /v1/uploads/{id}/parts data)',
    maximum: (limits) => limits.max_upload_part_bytes,
    refusal: { status: 413, code: 'file_too_large' },
    // The upload declares the part's size, capped at the largest upload: the part alone is judged.
    attempt: (base, bytes) => uploadInOnePart(base, Math.min(bytes, FILE_LIMIT), bytes),
  },
  {
    name: 'a JSON request body (POST /v1/sessions, padded with whitespace)',
    maximum: (limits) => limits.max_request_bytes,
    refusal: { status: 413, code: 'request_too_large' },
    attempt: async (base, bytes) => {
      const body = '{}'.padEnd(bytes, ' ');
      const res = await fetch(`${base}/v1/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.alice}`, 'content-type': 'application/json' },
        body,
      });
      const answer = { status: res.status, json: await res.json() };
      return res.status === 200 ? 'accepted' : refused(answer);
    },
  },
  {
    name: 'a session archive (GET /v1/sessions/{id}/files/archive)',
    maximum: (limits) => limits.archive.max_bytes,
    // A build over the limit fails each try; after the last the request answers 503.
    refusal: { status: 503, code: 'service_unavailable' },
    attempt: async (base, bytes) => {
      const sessionId = await sessionWithArtifact(base, bytes - (await zipOverheadOf(base)));
      const res = await finishedArchive(base, sessionId);
      if (res.status !== 200) return refused(res);
      expect(res.body.length).toBe(bytes);
      return 'accepted';
    },
  },
];

describe('every advertised maximum is accepted at exactly that size and refused one byte above', () => {
  const stack = new Stack(testPort(21380), CONFIGURED);
  let limits: Limits;

  beforeAll(async () => {
    await stack.start();
    limits = (await api('GET', '/v1/limits', { who: 'anon', base: stack.baseUrl })).json;
  }, 120_000);
  afterAll(() => stack.stop());

  it('GET /v1/limits serves the limits in effect: the inline and part limits capped by the file limit', () => {
    expect(limits).toMatchObject(EXPECTED_LIMITS);
  });

  it.each(EDGES.map((edge) => [edge.name, edge] as const))('%s: exactly the maximum is accepted', async (_, edge) => {
    expect(await edge.attempt(stack.baseUrl, edge.maximum(limits))).toBe('accepted');
  });

  it.each(EDGES.map((edge) => [edge.name, edge] as const))('%s: one byte more is refused', async (_, edge) => {
    expect(await edge.attempt(stack.baseUrl, edge.maximum(limits) + 1)).toEqual(edge.refusal);
  });

  it('all at once, twice over (the archive aside): the same outcomes, and no row or object of a refused one', async () => {
    const since = await dbNow();
    const keysBefore = await objectKeys();
    const openBefore = new Set(await unfinishedUploads());
    const burst = EDGES.filter((edge) => !edge.name.startsWith('a session archive')).flatMap((edge) =>
      [0, 1].flatMap(() => [
        { edge, bytes: edge.maximum(limits), expected: 'accepted' as Outcome },
        { edge, bytes: edge.maximum(limits) + 1, expected: edge.refusal as Outcome },
      ]),
    );
    const outcomes = await Promise.all(burst.map(({ edge, bytes }) => edge.attempt(stack.baseUrl, bytes)));
    expect(outcomes).toEqual(burst.map(({ expected }) => expected));
    // Nothing half-kept: no object still uploading, none kept without a file, a container file or an upload
    // part naming it, no new key in the bucket without a kept object behind it, no multipart upload left open.
    const unowned = async () => {
      const { rows } = await db.query(
        `SELECT o.storage_key FROM stored_objects o WHERE o.created_at >= $1 AND (o.status = 'UPLOADING' OR
            (o.status = 'READY' AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
              AND NOT EXISTS (SELECT 1 FROM container_files c WHERE c.object_id = o.id)))`,
        [since],
      );
      const { rows: kept } = await db.query(
        `SELECT storage_key FROM stored_objects WHERE created_at >= $1 AND status = 'READY'`,
        [since],
      );
      const keptKeys = new Set(kept.map((row: { storage_key: string }) => row.storage_key));
      const stray = [...(await objectKeys())].filter(
        (key) => !keysBefore.has(key) && key.startsWith('objects/') && !keptKeys.has(key),
      );
      const open = (await unfinishedUploads()).filter((upload) => !openBefore.has(upload));
      return [...rows.map((row: { storage_key: string }) => row.storage_key), ...stray, ...open];
    };
    await pollUntil(async () => (await unowned()).length === 0, 'no leftovers of the refused requests', 30_000);
  });
});
