import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import { api, containerUpload, newSession, type ApiResponse, type Who } from '../support/api';
import { db } from '../support/db';
import { E2E_BASE_URL, E2E_PORT_BASE, ownQueues, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { deleteObject, objectExists } from '../support/s3';
import { Stack } from '../support/stack';
import { centralDirectory, extractWithUnzip, listWithUnzip } from '../support/zip';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const archivePath = (sid: string) => `/v1/sessions/${sid}/files/archive`;

/** GET the archive, following 202 + Retry-After until the 200. */
async function fetchArchive(
  sid: string,
  opts: { who?: Who; base?: string; headers?: Record<string, string> } = {},
): Promise<{ res: ApiResponse; accepted: ApiResponse[] }> {
  const accepted: ApiResponse[] = [];
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await api('GET', archivePath(sid), opts);
    if (res.status !== 202) return { res, accepted };
    accepted.push(res);
    if (Date.now() > deadline) throw new Error(`archive still 202 after 60 s: ${res.body}`);
    await sleep(Math.min(1000, Number(res.headers.get('retry-after') ?? 1) * 1000));
  }
}

/** The session's artifacts in listing order, each with the bytes …/content answers. */
async function artifactsWithContent(sid: string): Promise<{ id: string; filename: string; data: Buffer }[]> {
  const listing = await api('GET', `/v1/sessions/${sid}/files`);
  const out = [];
  for (const file of listing.json.files) {
    const content = await api('GET', `/v1/containers/${file.container_id}/files/${file.id}/content`);
    expect(content.status).toBe(200);
    out.push({ id: file.id as string, filename: file.filename as string, data: content.body });
  }
  return out;
}

/** Extracts with the system unzip; every artifact must come out byte-identical under its entry name. */
async function expectArchiveHoldsArtifacts(sid: string, zip: Buffer): Promise<string[]> {
  const artifacts = await artifactsWithContent(sid);
  const entries = centralDirectory(zip);
  expect(entries).toHaveLength(artifacts.length);
  const extracted = extractWithUnzip(zip);
  expect(extracted.size).toBe(artifacts.length);
  entries.forEach((entry, i) => {
    expect(entry.utf8Flag).toBe(true);
    const bytes = extracted.get(entry.name);
    expect(bytes, `entry ${JSON.stringify(entry.name)} was not extracted under its own name`).toBeDefined();
    expect(sha256(bytes!)).toBe(sha256(artifacts[i]!.data));
  });
  return entries.map((entry) => entry.name);
}

/** A container_files row written straight into Postgres, for names the upload API would refuse. */
async function insertArtifactRow(like: { id: string }, filename: string): Promise<void> {
  const id = newId('file');
  await db.query(
    `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes, content_type, sha256, source, created_at)
     SELECT $1, principal_id, session_id, container_id, object_id, $2, bytes, content_type, sha256, source, now() FROM container_files WHERE id = $3`,
    [id, filename, like.id],
  );
  await db.query(
    `UPDATE stored_objects SET ref_count = ref_count + 1 WHERE id = (SELECT object_id FROM container_files WHERE id = $1)`,
    [like.id],
  );
}

async function archiveObjectKeys(sid: string): Promise<string[]> {
  const { rows } = await db.query(
    `SELECT o.storage_key FROM archives a JOIN stored_objects o ON o.id = a.object_id WHERE a.session_id = $1`,
    [sid],
  );
  return rows.map((row) => row.storage_key as string);
}

describe('session archives', () => {
  it('holds every artifact byte-identical, extracts with unzip, and is served as a download', async () => {
    const session = await newSession();
    await containerUpload(session.container_id, 'notes.txt', 'hello archive\n'.repeat(200), { type: 'text/plain' });
    await containerUpload(session.container_id, 'random.bin', randomBytes(300_000));
    await containerUpload(session.container_id, 'pixel.png', randomBytes(2_000), { type: 'image/png' });
    await containerUpload(session.container_id, 'empty.txt', '', { type: 'text/plain' });
    const { res } = await fetchArchive(session.id);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${session.id}.zip"`);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(Number(res.headers.get('content-length'))).toBe(res.body.length);
    expect(res.headers.get('etag')).toBe(`"${sha256(res.body)}"`);
    const names = await expectArchiveHoldsArtifacts(session.id, res.body);
    expect(names).toEqual(['notes.txt', 'random.bin', 'pixel.png', 'empty.txt']);
    const methods = centralDirectory(res.body).map((entry) => entry.method);
    expect(methods).toEqual([8, 0, 0, 8]); // text deflated, binary and images stored
  });

  it('gives hostile, long, reserved, Unicode and duplicate names safe unique entries', async () => {
    const session = await newSession();
    const uploaded = [
      'report.md',
      'Report.MD',
      'report.md',
      'report (2).md',
      'CON',
      'nul.txt',
      '..hidden',
      'C:evil.txt',
      'a:b*c?d"e<f>g|h.txt',
      'trailing.',
      `${'😀'.repeat(80)}.md`,
      'ünïcødé-日本.txt',
    ];
    const first = await containerUpload(session.container_id, uploaded[0]!, 'first\n', { type: 'text/markdown' });
    for (const [i, name] of uploaded.slice(1).entries())
      await containerUpload(session.container_id, name, `file ${i}\n`, { type: 'text/plain' });
    for (const name of [
      '../../../tmp/evil.txt',
      '..\\..\\evil.txt',
      '/etc/passwd',
      'ctl\u0001\u007f.txt',
      'bidi\u202egpj.exe',
      '..',
      '',
      `${'x'.repeat(300)}.txt`,
    ])
      await insertArtifactRow(first, name);
    const { res } = await fetchArchive(session.id);
    expect(res.status).toBe(200);
    const names = await expectArchiveHoldsArtifacts(session.id, res.body);
    expect(names.slice(0, 4)).toEqual(['report.md', 'Report (2).MD', 'report (3).md', 'report (2) (2).md']);
    expect(names).toContain('_CON');
    expect(names).toContain('_nul.txt');
    expect(names).toContain('ünïcødé-日本.txt');
    for (const name of names) {
      expect(name).not.toMatch(/[/\\\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
      expect(name.startsWith('..')).toBe(false);
      expect(name).not.toMatch(/^[A-Za-z]:/);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    }
    expect(new Set(names.map((name) => name.toLowerCase())).size).toBe(names.length);
    const long = names.find((name) => name.startsWith('xxx'))!;
    expect(Buffer.byteLength(long)).toBe(255);
    expect(long.endsWith('.txt')).toBe(true);
  });

  it('of an empty session is a valid empty zip', async () => {
    const session = await newSession();
    const { res } = await fetchArchive(session.id);
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(22);
    expect(res.body.readUInt32LE(0)).toBe(0x06054b50);
    expect(centralDirectory(res.body)).toEqual([]);
    expect(listWithUnzip(res.body)).toMatch(/zipfile is empty/);
  });

  it('answers ranges, a strong ETag and 304 like a download', async () => {
    const session = await newSession();
    await containerUpload(session.container_id, 'a.bin', randomBytes(10_000));
    const { res } = await fetchArchive(session.id);
    const etag = res.headers.get('etag')!;
    const range = await api('GET', archivePath(session.id), { headers: { range: 'bytes=0-3' } });
    expect(range.status).toBe(206);
    expect(range.headers.get('content-range')).toBe(`bytes 0-3/${res.body.length}`);
    expect(range.body.equals(res.body.subarray(0, 4))).toBe(true);
    expect(
      (await api('GET', archivePath(session.id), { headers: { range: `bytes=${res.body.length}-` } })).status,
    ).toBe(416);
    const notModified = await api('GET', archivePath(session.id), { headers: { 'if-none-match': etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.body.length).toBe(0);
  });

  it('builds anew after an artifact is added, and purges the superseded archive from the bucket', async () => {
    const session = await newSession();
    await containerUpload(session.container_id, 'one.txt', 'one\n', { type: 'text/plain' });
    const before = (await fetchArchive(session.id)).res;
    expect(centralDirectory(before.body).map((entry) => entry.name)).toEqual(['one.txt']);
    const [oldKey] = await archiveObjectKeys(session.id);
    expect(await objectExists(oldKey!)).toBe(true);
    const again = await api('GET', archivePath(session.id));
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe(before.headers.get('etag'));

    await containerUpload(session.container_id, 'two.txt', 'two\n', { type: 'text/plain' });
    const after = (await fetchArchive(session.id)).res;
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    await expectArchiveHoldsArtifacts(session.id, after.body);
    expect(centralDirectory(after.body).map((entry) => entry.name)).toEqual(['one.txt', 'two.txt']);
    await pollUntil(async () => !(await objectExists(oldKey!)), 'superseded archive purged from the bucket', 20_000);
    expect(await archiveObjectKeys(session.id)).toHaveLength(1);
  });

  it('builds again when the cached ZIP has left the bucket, however many ask at once', async () => {
    const session = await newSession();
    await containerUpload(session.container_id, 'kept.txt', `kept ${randomBytes(6).toString('hex')}\n`, {
      type: 'text/plain',
    });
    expect((await fetchArchive(session.id)).res.status).toBe(200);
    const [lostKey] = await archiveObjectKeys(session.id);
    await deleteObject(lostKey!);
    const answers = await Promise.all(Array.from({ length: 6 }, () => api('GET', archivePath(session.id))));
    const lost = answers.filter((answer) => answer.status === 503);
    // Whoever read the lost row hears a 503 with Retry-After; whoever came after it waits for the new build.
    expect(lost.length).toBeGreaterThan(0);
    for (const answer of answers) expect([200, 202, 503]).toContain(answer.status);
    for (const answer of lost) {
      expect(answer.json.error.code).toBe('service_unavailable');
      expect(answer.json.error.message).toMatch(/missing from storage/);
      expect(answer.headers.get('retry-after')).toBe('2');
      expect([answer.headers.get('etag'), answer.headers.get('content-disposition')]).toEqual([null, null]);
    }
    const { res } = await fetchArchive(session.id);
    expect(res.status).toBe(200);
    await expectArchiveHoldsArtifacts(session.id, res.body);
    const keys = await archiveObjectKeys(session.id);
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toBe(lostKey);
    expect(await objectExists(keys[0]!)).toBe(true);
    // One archive row for the session, and the lost ZIP's object released: no reference left on it.
    expect((await db.query('SELECT 1 FROM archives WHERE session_id = $1', [session.id])).rowCount).toBe(1);
    await pollUntil(
      async () =>
        (await db.query('SELECT 1 FROM stored_objects WHERE storage_key = $1 AND ref_count > 0', [lostKey]))
          .rowCount === 0,
      "the lost ZIP's object released",
      20_000,
    );
  });

  it('drops the archive with an artifact or a container deleted from the session: no stale copy of their bytes is kept', async () => {
    const session = await newSession();
    const doomed = await containerUpload(session.container_id, 'doomed.txt', 'doomed\n', { type: 'text/plain' });
    await containerUpload(session.container_id, 'kept.txt', 'kept\n', { type: 'text/plain' });
    expect((await fetchArchive(session.id)).res.status).toBe(200);
    const [first] = await archiveObjectKeys(session.id);
    expect((await api('DELETE', `/v1/containers/${session.container_id}/files/${doomed.id}`)).status).toBe(200);
    expect(await archiveObjectKeys(session.id)).toEqual([]);
    await pollUntil(async () => !(await objectExists(first!)), 'archive holding a deleted artifact purged', 20_000);
    const after = (await fetchArchive(session.id)).res;
    expect(centralDirectory(after.body).map((entry) => entry.name)).toEqual(['kept.txt']);

    const [second] = await archiveObjectKeys(session.id);
    expect((await api('DELETE', `/v1/containers/${session.container_id}`)).status).toBe(200);
    expect(await archiveObjectKeys(session.id)).toEqual([]);
    await pollUntil(async () => !(await objectExists(second!)), 'archive of a deleted container purged', 20_000);
    const empty = (await fetchArchive(session.id)).res;
    expect(empty.body.length).toBe(22);
  });

  it('is 404 for another principal, with the body of a missing session', async () => {
    const session = await newSession();
    await containerUpload(session.container_id, 'secret.txt', 'secret bytes\n', { type: 'text/plain' });
    const theirs = await api('GET', archivePath(session.id), { who: 'bob' });
    const missing = await api('GET', archivePath(newId('session')), { who: 'bob' });
    expect(theirs.status).toBe(404);
    expect(theirs.json).toEqual(missing.json);
    expect(theirs.json.error.code).toBe('not_found');
    expect((await api('GET', archivePath('sess_..%2f..'), { who: 'alice' })).status).toBe(404);
    expect((await api('GET', archivePath(session.id), { who: 'anon' })).status).toBe(401);
  });

  it('is 404 at once after the session is deleted, and its archive leaves the bucket', async () => {
    const session = await newSession();
    await containerUpload(session.container_id, 'doomed.txt', 'doomed\n', { type: 'text/plain' });
    expect((await fetchArchive(session.id)).res.status).toBe(200);
    const [key] = await archiveObjectKeys(session.id);
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
    expect((await api('GET', archivePath(session.id))).status).toBe(404);
    expect(await archiveObjectKeys(session.id)).toEqual([]);
    await pollUntil(async () => !(await objectExists(key!)), 'archive of a deleted session purged', 20_000);
  });
});

describe('session archives that outlast the wait', () => {
  // Its own stack with no wait at all, so the first request is always answered before the build ends.
  const stack = new Stack(testPort(18680), { ARCHIVE_WAIT_MS: '0' });
  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  it('answers 202 with the progress and Retry-After, then the 200', async () => {
    const session = await newSession();
    const sizes = [200_000, 100_000, 50_000];
    for (const [i, size] of sizes.entries())
      await containerUpload(session.container_id, `part-${i}.bin`, randomBytes(size));
    const first = await api('GET', archivePath(session.id), { base: stack.baseUrl });
    expect(first.status).toBe(202);
    expect(first.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(first.json).toMatchObject({
      object: 'session.archive',
      status: 'in_progress',
      files_total: 3,
      bytes_total: 350_000,
    });
    for (const key of ['files_done', 'bytes_done']) {
      expect(Number.isInteger(first.json[key])).toBe(true);
      expect(first.json[key]).toBeGreaterThanOrEqual(0);
    }
    expect(first.json.files_done).toBeLessThanOrEqual(3);
    const { res } = await fetchArchive(session.id, { base: stack.baseUrl });
    expect(res.status).toBe(200);
    await expectArchiveHoldsArtifacts(session.id, res.body);
    // The same archive from the shared stack: one build per manifest, whichever gateway asked.
    const shared = await api('GET', archivePath(session.id), { base: E2E_BASE_URL });
    expect(shared.headers.get('etag')).toBe(res.headers.get('etag'));
  });
});

describe('session archives whose build keeps failing', () => {
  // Queues of its own, so only this stack's worker (whose archives may hold 2,000 bytes) takes the job.
  const stack = new Stack(testPort(18980), {
    ARCHIVE_WAIT_MS: '0',
    ARCHIVE_MAX_BYTES: '2000',
    ...ownQueues('failing-archives'),
  });
  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  it('answers 503 after the last retry, keeps no partial zip, and starts over on the next request', async () => {
    const since = (await db.query('SELECT now() AS now')).rows[0].now as Date;
    const session = await newSession();
    await containerUpload(session.container_id, 'too-big.bin', randomBytes(50_000));
    const first = await api('GET', archivePath(session.id), { base: stack.baseUrl });
    expect(first.status).toBe(202);
    const failed = await pollUntil(
      async () => {
        const res = await api('GET', archivePath(session.id), { base: stack.baseUrl });
        return res.status === 503 ? res : null;
      },
      'the archive answered 503 after three failed builds',
      90_000,
      1_000,
    );
    expect(failed!.json.error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });
    expect(Number(failed!.headers.get('retry-after'))).toBeGreaterThan(0);
    // While it cools down, polling does not restart the hopeless build: still 503, no new job.
    expect((await api('GET', archivePath(session.id), { base: stack.baseUrl })).status).toBe(503);
    const { rows } = await db.query('SELECT status, object_id FROM archives WHERE session_id = $1', [session.id]);
    expect(rows).toEqual([{ status: 'failed', object_id: null }]);
    // Every attempt's object was discarded: nothing made since the test began is left UPLOADING or READY without an
    // owner.
    const leftovers = await db.query(
      `SELECT count(*)::int AS n FROM stored_objects o WHERE o.created_at >= $1 AND o.status IN ('UPLOADING', 'READY')
          AND NOT EXISTS (SELECT 1 FROM container_files f WHERE f.object_id = o.id) AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
          AND NOT EXISTS (SELECT 1 FROM archives a WHERE a.object_id = o.id)`,
      [since],
    );
    expect(leftovers.rows[0].n).toBe(0);
    // Once the cool-down has passed, the next request tries again: a new build is queued, answered 202.
    await db.query("UPDATE archives SET updated_at = now() - interval '1 minute' WHERE session_id = $1", [session.id]);
    const retried = await api('GET', archivePath(session.id), { base: stack.baseUrl });
    expect(retried.status).toBe(202);
  });
});

describe('a request waiting for an archive', () => {
  // A second gateway on the shared stack whose fallback re-read is an hour away: only the build's completion
  // event can end its wait early.
  const gateway = new Stack(testPort(18480), {
    STORAGE_URL: `http://127.0.0.1:${E2E_PORT_BASE + 1}`,
    ARCHIVE_WAIT_MS: '60000',
    JOB_WAIT_FALLBACK_MS: '3600000',
  });
  beforeAll(() => gateway.start(['gateway']));
  afterAll(() => gateway.stop());

  it('is answered soon after the build completes, woken by the job rather than by re-reading the row', async () => {
    const session = await newSession();
    await containerUpload(session.container_id, 'woken.bin', randomBytes(500_000));
    const started = Date.now();
    const res = await api('GET', archivePath(session.id), { base: gateway.baseUrl });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(30_000);
    await expectArchiveHoldsArtifacts(session.id, res.body);
  });
});
