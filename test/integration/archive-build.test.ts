import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Queue } from 'bullmq';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB, JOBS, manifestOf, newId, QUEUE } from '@app/contracts';
import { db } from '../support/db';
import { TEST_BUCKET, TEST_REDIS_URL, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { objectExists, s3, unfinishedUploads } from '../support/s3';
import { Stack } from '../support/stack';
import { centralDirectory, extractWithUnzip } from '../support/zip';

// Storage and worker only: the build path from a queued job to a ZIP in the bucket, with real Redis, Postgres and S3.
const stack = new Stack(testPort(18780));
const queue = new Queue(QUEUE.archive, { connection: { url: TEST_REDIS_URL } });
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

interface Artifact {
  id: string;
  filename: string;
  data: Buffer;
}

/** A live session with artifacts whose bytes are in the bucket, written as the gateway would. */
async function sessionWith(files: { filename: string; data: Buffer; contentType?: string }[]) {
  const { rows: principals } = await db.query(
    `INSERT INTO principals (id, name) VALUES (gen_random_uuid(), $1) RETURNING id`,
    [`archive-${randomUUID()}`],
  );
  const principalId = principals[0].id as string;
  const sessionId = newId('session');
  const containerId = newId('container');
  await db.query(`INSERT INTO sessions (id, principal_id) VALUES ($1, $2)`, [sessionId, principalId]);
  await db.query(`INSERT INTO containers (id, principal_id, session_id) VALUES ($1, $2, $3)`, [
    containerId,
    principalId,
    sessionId,
  ]);
  await db.query(`UPDATE sessions SET current_container_id = $1 WHERE id = $2`, [containerId, sessionId]);
  const artifacts: Artifact[] = [];
  for (const file of files) {
    const key = `objects/${randomUUID()}`;
    await s3.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: key, Body: file.data }));
    const { rows } = await db.query(
      `INSERT INTO stored_objects (id, principal_id, storage_key, status, bytes, sha256, ref_count) VALUES (gen_random_uuid(), $1, $2, 'READY', $3, $4, 1) RETURNING id::text`,
      [principalId, key, file.data.length, sha256(file.data)],
    );
    const id = newId('file');
    await db.query(
      `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes, content_type, sha256, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'user')`,
      [
        id,
        principalId,
        sessionId,
        containerId,
        rows[0].id,
        file.filename,
        file.data.length,
        file.contentType ?? 'application/octet-stream',
        sha256(file.data),
      ],
    );
    artifacts.push({ id, filename: file.filename, data: file.data });
  }
  return { principalId, sessionId, containerId, artifacts };
}

/** The pending archive row the gateway would create for the session as it is now, and its job. */
async function requestArchive(session: { principalId: string; sessionId: string; artifacts: Artifact[] }) {
  const manifest = manifestOf(
    session.artifacts.map((a) => ({ id: a.id, sha256: sha256(a.data), bytes: a.data.length, filename: a.filename })),
  );
  const { rows } = await db.query(
    `INSERT INTO archives (id, principal_id, session_id, manifest_hash, files_total, bytes_total) VALUES (gen_random_uuid(), $1, $2, $3, $4, $5) RETURNING id::text`,
    [session.principalId, session.sessionId, manifest.hash, manifest.filesTotal, manifest.bytesTotal],
  );
  const archiveId = rows[0].id as string;
  await queue.add(
    JOB.buildArchive,
    { archiveId },
    { ...JOBS[JOB.buildArchive].options, jobId: JOBS[JOB.buildArchive].jobId({ archiveId }) },
  );
  return { archiveId, manifest };
}

async function archiveRow(archiveId: string) {
  const { rows } = await db.query(
    `SELECT a.status::text, a.files_done, a.bytes_done::text, a.files_total, o.storage_key, o.status::text AS object_status, o.ref_count, o.bytes::text AS object_bytes
       FROM archives a LEFT JOIN stored_objects o ON o.id = a.object_id WHERE a.id = $1`,
    [archiveId],
  );
  return rows[0] as
    | {
        status: string;
        files_done: number;
        bytes_done: string;
        files_total: number;
        storage_key: string | null;
        object_status: string | null;
        ref_count: number | null;
        object_bytes: string | null;
      }
    | undefined;
}

async function readObject(key: string): Promise<Buffer> {
  const out = await s3.send(new GetObjectCommand({ Bucket: TEST_BUCKET, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

beforeAll(() => stack.start(['storage', 'worker']));
afterAll(async () => {
  await queue.close();
  await stack.stop();
});

describe('archive build through the worker', () => {
  it('streams every artifact into a ZIP object, records progress, and a re-run changes nothing', async () => {
    const session = await sessionWith([
      { filename: 'a.txt', data: Buffer.from('text '.repeat(10_000)), contentType: 'text/plain' },
      { filename: 'b.bin', data: randomBytes(6 * 1024 * 1024) },
      { filename: 'a.txt', data: Buffer.from('second a\n'), contentType: 'text/plain' },
    ]);
    const { archiveId, manifest } = await requestArchive(session);
    const row = await pollUntil(
      async () => ((await archiveRow(archiveId))?.status === 'ready' ? archiveRow(archiveId) : null),
      'archive ready',
      30_000,
    );
    expect(row).toMatchObject({
      files_done: 3,
      files_total: 3,
      bytes_done: String(manifest.bytesTotal),
      object_status: 'READY',
      ref_count: 1,
    });
    const zip = await readObject(row!.storage_key!);
    expect(String(zip.length)).toBe(row!.object_bytes);
    expect(centralDirectory(zip).map((e) => [e.name, e.method])).toEqual([
      ['a.txt', 8],
      ['b.bin', 0],
      ['a (2).txt', 8],
    ]);
    const extracted = extractWithUnzip(zip);
    expect(sha256(extracted.get('b.bin')!)).toBe(sha256(session.artifacts[1]!.data));
    expect(extracted.get('a (2).txt')!.toString()).toBe('second a\n');

    const rerun = await queue.add(
      JOB.buildArchive,
      { archiveId },
      { jobId: `${JOBS[JOB.buildArchive].jobId({ archiveId })}-again` },
    );
    await pollUntil(
      async () => (await rerun.getState()) === 'completed' || (await queue.getJob(rerun.id!)) === undefined,
      're-run done',
      20_000,
    );
    expect((await archiveRow(archiveId))!.storage_key).toBe(row!.storage_key);
  });

  it('keeps nothing for a session deleted before its build runs', async () => {
    const session = await sessionWith([{ filename: 'x.bin', data: randomBytes(1000) }]);
    const before = (
      await db.query(`SELECT count(*)::int AS n FROM stored_objects WHERE principal_id = $1`, [session.principalId])
    ).rows[0].n;
    await db.query(`UPDATE sessions SET deleted_at = now() WHERE id = $1`, [session.sessionId]);
    const { archiveId } = await requestArchive(session);
    await pollUntil(
      async () => (await archiveRow(archiveId)) === undefined,
      'archive row of a deleted session removed',
      20_000,
    );
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM stored_objects WHERE principal_id = $1 AND status IN ('READY', 'UPLOADING')`,
      [session.principalId],
    );
    expect(rows[0].n).toBe(before);
  });

  it('drops a build whose session no longer holds the artifacts it was asked for', async () => {
    const session = await sessionWith([
      { filename: 'keep.txt', data: Buffer.from('keep\n'), contentType: 'text/plain' },
    ]);
    const stale = {
      ...session,
      artifacts: [...session.artifacts, { id: newId('file'), filename: 'gone.txt', data: Buffer.from('gone\n') }],
    };
    const { archiveId } = await requestArchive(stale);
    await pollUntil(async () => (await archiveRow(archiveId)) === undefined, 'superseded archive row removed', 20_000);
    await nothingHalfWritten(session.principalId, 'discarded ZIP purged');
  });

  it('supersedes and purges the older archive of the session when a newer one is ready', async () => {
    const session = await sessionWith([{ filename: 'one.txt', data: Buffer.from('one\n'), contentType: 'text/plain' }]);
    const first = await requestArchive(session);
    const old = await pollUntil(
      async () => ((await archiveRow(first.archiveId))?.status === 'ready' ? archiveRow(first.archiveId) : null),
      'first archive ready',
      20_000,
    );
    const more = await sessionWithExtra(session, { filename: 'two.txt', data: Buffer.from('two\n') });
    const second = await requestArchive(more);
    await pollUntil(
      async () => (await archiveRow(second.archiveId))?.status === 'ready',
      'second archive ready',
      20_000,
    );
    expect(await archiveRow(first.archiveId)).toBeUndefined();
    await pollUntil(async () => !(await objectExists(old!.storage_key!)), 'old archive purged from the bucket', 20_000);
  });

  it('stops a build early when an artifact is added to the session mid-build, and keeps nothing of it', async () => {
    // The artifact must land while the build runs: a build that finished first is rightly kept, and says
    // nothing about a stale one. Such an attempt (on a fast machine) is done again with a new session.
    for (let attempt = 1; ; attempt++) {
      // Enough entries that the first progress report (after a second) comes well before the end.
      const session = await sessionWith(
        Array.from({ length: 200 }, (_, i) => ({ filename: `f${i}.bin`, data: randomBytes(1024 * 1024) })),
      );
      const { archiveId } = await requestArchive(session);
      await pollUntil(async () => ((await archiveRow(archiveId))?.files_done ?? 0) >= 1, 'build under way', 20_000);
      if ((await archiveRow(archiveId))?.status === 'ready' && attempt < 5) continue;
      await sessionWithExtra(session, { filename: 'late.txt', data: Buffer.from('late\n') });
      const { rows: ready } = await db.query(
        `SELECT a.updated_at < (SELECT max(created_at) FROM container_files WHERE session_id = $2) AS before_extra
           FROM archives a WHERE a.id = $1 AND a.status = 'ready'`,
        [archiveId, session.sessionId],
      );
      if (ready[0]?.before_extra && attempt < 5) continue;
      // How far the build got depends on the machine (it may have written every entry before the watcher's
      // next look); what must hold is that it is never kept: the row goes without being ready.
      const statuses = new Set<string>();
      await pollUntil(
        async () => {
          const row = await archiveRow(archiveId);
          if (row) statuses.add(row.status);
          return row === undefined;
        },
        'stale build stopped and its row removed',
        20_000,
      );
      expect(statuses.has('ready')).toBe(false);
      await nothingHalfWritten(session.principalId, 'the half-built ZIP discarded');
      expect(await unfinishedUploads()).toEqual([]);
      return;
    }
  });
});

/** Waits until the principal has no object being written or purged: a discarded ZIP is gone. */
async function nothingHalfWritten(principalId: string, what: string): Promise<void> {
  await pollUntil(
    async () =>
      (
        await db.query(`SELECT 1 FROM stored_objects WHERE principal_id = $1 AND status IN ('UPLOADING', 'PURGING')`, [
          principalId,
        ])
      ).rowCount === 0,
    what,
    20_000,
  );
}

async function sessionWithExtra(
  session: Awaited<ReturnType<typeof sessionWith>>,
  file: { filename: string; data: Buffer },
) {
  const key = `objects/${randomUUID()}`;
  await s3.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: key, Body: file.data }));
  const { rows } = await db.query(
    `INSERT INTO stored_objects (id, principal_id, storage_key, status, bytes, sha256, ref_count) VALUES (gen_random_uuid(), $1, $2, 'READY', $3, $4, 1) RETURNING id::text`,
    [session.principalId, key, file.data.length, sha256(file.data)],
  );
  const id = newId('file');
  await db.query(
    `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes, content_type, sha256, source) VALUES ($1, $2, $3, $4, $5, $6, $7, 'text/plain', $8, 'user')`,
    [
      id,
      session.principalId,
      session.sessionId,
      session.containerId,
      rows[0].id,
      file.filename,
      file.data.length,
      sha256(file.data),
    ],
  );
  return { ...session, artifacts: [...session.artifacts, { id, ...file }] };
}
