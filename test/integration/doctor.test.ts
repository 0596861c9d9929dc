import { CreateMultipartUploadCommand, DeleteBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorConfig } from '@app/common';
import { runDoctor } from '../../apps/storage/src/cli/doctor';
import { scratchDatabase } from '../support/db';
import { TEST_BUCKET } from '../support/env';
import { doctorConfigFor } from '../support/doctor';
import { emptyBucket, ensureBucket, objectExists, s3, unfinishedUploads } from '../support/s3';

// The consistency checker against a real Postgres and S3: a database and a bucket of its own (so other
// tests' rows and objects are not its findings), each kind of inconsistency planted, found, and repaired
// where that is safe.
const BUCKET = `${TEST_BUCKET}-doctor`;
const ROOT = join(__dirname, '../..');
let database: { url: string; drop(): Promise<void> };
let sql: pg.Pool;
let config: DoctorConfig;
let principal: string;

const hex = () => randomUUID().replaceAll('-', '').padEnd(64, '0');
const base62 = () => randomUUID().replaceAll('-', '').slice(0, 24);

async function object(
  status: string,
  refCount: number,
  options: { bytes?: number; inBucket?: boolean; age?: string } = {},
) {
  const key = `objects/${randomUUID()}`;
  const bytes = options.bytes ?? 5;
  if (options.inBucket ?? true)
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'x'.repeat(bytes) }));
  const { rows } = await sql.query(
    `INSERT INTO stored_objects (id, principal_id, storage_key, status, bytes, ref_count, created_at, updated_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, now() - $6::interval, now() - $6::interval) RETURNING id::text`,
    [principal, key, status, bytes, refCount, options.age ?? '0 seconds'],
  );
  return { id: rows[0].id as string, key };
}

async function file(objectId: string, deleted = false): Promise<string> {
  const id = `file_${base62()}`;
  await sql.query(
    `INSERT INTO files (id, principal_id, object_id, filename, bytes, content_type, sha256, purpose, deleted_at)
     VALUES ($1, $2, $3, 'a.txt', 5, 'text/plain', $4, 'user_data', $5)`,
    [id, principal, objectId, hex(), deleted ? new Date() : null],
  );
  return id;
}

async function session(deleted = false): Promise<{ sessionId: string; containerId: string }> {
  const sessionId = `sess_${base62()}`;
  const containerId = `cntr_${base62()}`;
  await sql.query(`INSERT INTO sessions (id, principal_id, deleted_at) VALUES ($1, $2, $3)`, [
    sessionId,
    principal,
    deleted ? new Date() : null,
  ]);
  await sql.query(`INSERT INTO containers (id, principal_id, session_id) VALUES ($1, $2, $3)`, [
    containerId,
    principal,
    sessionId,
  ]);
  if (!deleted)
    await sql.query(`UPDATE sessions SET current_container_id = $1 WHERE id = $2`, [containerId, sessionId]);
  return { sessionId, containerId };
}

async function containerFile(where: { sessionId: string; containerId: string }, objectId: string): Promise<string> {
  const id = `file_${base62()}`;
  await sql.query(
    `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes, content_type, sha256, source)
     VALUES ($1, $2, $3, $4, $5, 'r.md', 5, 'text/markdown', $6, 'user')`,
    [id, principal, where.sessionId, where.containerId, objectId, hex()],
  );
  return id;
}

const kinds = (report: Awaited<ReturnType<typeof runDoctor>>) => report.findings.map((f) => f.kind).sort();

beforeAll(async () => {
  database = await scratchDatabase('doctor');
  sql = new pg.Pool({ connectionString: database.url, max: 2 });
  await ensureBucket(BUCKET);
  await emptyBucket(BUCKET); // a previous run's leftovers
  config = doctorConfigFor(database.url, BUCKET, {
    STORAGE_ABANDONED_UPLOAD_SECONDS: '1',
    STALE_UPLOAD_SECONDS: '3600',
  });
  const { rows } = await sql.query(`INSERT INTO principals (id, name) VALUES (gen_random_uuid(), $1) RETURNING id`, [
    `doctor-${randomUUID()}`,
  ]);
  principal = rows[0].id;
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
  await emptyBucket(BUCKET).catch(() => undefined);
  await s3.send(new DeleteBucketCommand({ Bucket: BUCKET })).catch(() => undefined);
});

describe('the consistency checker', () => {
  it('finds nothing in a consistent installation', async () => {
    const held = await object('READY', 2);
    await file(held.id);
    const { sessionId, containerId } = await session();
    await containerFile({ sessionId, containerId }, held.id);
    await object('UPLOADING', 0, { inBucket: false });
    expect((await runDoctor(config, { repair: false, json: false })).findings).toEqual([]);
  });

  it('finds each repairable inconsistency, repairs it, and then finds nothing', async () => {
    const orphanKey = `objects/${randomUUID()}`;
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: orphanKey, Body: 'nobody owns me' }));
    const purged = await object('PURGED', 0);
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: `objects/${randomUUID()}` }));
    // A resumable upload still pending holds its multipart upload open on purpose, however idle: not a finding.
    const resumableKey = `uploads/${randomUUID()}`;
    const resumable = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: resumableKey }));
    await sql.query(
      `INSERT INTO uploads (id, principal_id, filename, purpose, bytes, mime_type, expires_at, storage_key, s3_upload_id)
       VALUES ($1, $2, 'big.bin', 'user_data', 10485760, 'application/octet-stream', now() + interval '1 hour', $3, $4)`,
      [`upload_${base62()}`, principal, resumableKey, resumable.UploadId],
    );
    const staleUpload = await object('UPLOADING', 0, { inBucket: false, age: '2 hours' });
    const lostPurge = await object('PURGING', 0, { age: '1 hour' });
    const overCounted = await object('READY', 3);
    await file(overCounted.id);
    const leaked = await object('READY', 1);
    await file(leaked.id, true);
    const underDeleted = await session(true);
    const artifact = await object('READY', 1);
    const orphanedFile = await containerFile(underDeleted, artifact.id);
    const live = await session();
    const source = await object('READY', 1);
    await containerFile(live, source.id);
    const { rows: previews } = await sql.query(
      `INSERT INTO previews (id, principal_id, sha256, format, version, source_object_id, source_filename,
         source_content_type, updated_at)
       VALUES (gen_random_uuid(), $1, $2, 'docx', 1, $3, 'a.docx', 'application/x', now() - interval '1 hour')
       RETURNING id::text`,
      [principal, hex(), source.id],
    );
    const { rows: archives } = await sql.query(
      `INSERT INTO archives (id, principal_id, session_id, manifest_hash, status, files_total, bytes_total, updated_at)
       VALUES (gen_random_uuid(), $1, $2, $3, 'building', 1, 5, now() - interval '1 hour') RETURNING id::text`,
      [principal, live.sessionId, hex()],
    );
    const responseId = `resp_${base62()}`;
    await sql.query(
      `INSERT INTO responses (id, principal_id, session_id, container_id, agent, deadline_at)
       VALUES ($1, $2, $3, $4, 'report', now() - interval '1 hour')`,
      [responseId, principal, live.sessionId, live.containerId],
    );
    await new Promise((resolve) => setTimeout(resolve, 1500)); // past the abandoned-upload horizon of 1 s

    const found = await runDoctor(config, { repair: false, json: false });
    expect(kinds(found)).toEqual(
      [
        'abandoned_upload',
        'orphan_object',
        'orphan_object',
        'orphaned_row',
        'orphaned_row',
        'reference_count',
        'reference_count',
        'stuck_row',
        'stuck_row',
        'stuck_row',
        'stuck_row',
        'stuck_row',
      ].sort(),
    );
    expect(found.findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'orphan_object', key: orphanKey, row: 'none' }),
        expect.objectContaining({ kind: 'orphan_object', key: purged.key, row: 'PURGED' }),
        expect.objectContaining({ kind: 'abandoned_upload', uploadId: upload.UploadId }),
        expect.objectContaining({
          kind: 'stuck_row',
          table: 'stored_objects',
          id: staleUpload.id,
          status: 'UPLOADING',
        }),
        expect.objectContaining({ kind: 'stuck_row', table: 'stored_objects', id: lostPurge.id, status: 'PURGING' }),
        expect.objectContaining({ kind: 'stuck_row', table: 'previews', id: previews[0].id }),
        expect.objectContaining({ kind: 'stuck_row', table: 'archives', id: archives[0].id }),
        expect.objectContaining({ kind: 'stuck_row', table: 'responses', id: responseId }),
        expect.objectContaining({ kind: 'reference_count', objectId: overCounted.id, recorded: 3, live: 1 }),
        expect.objectContaining({ kind: 'reference_count', objectId: leaked.id, recorded: 1, live: 0 }),
        expect.objectContaining({ kind: 'orphaned_row', table: 'containers', id: underDeleted.containerId }),
        expect.objectContaining({ kind: 'orphaned_row', table: 'container_files', id: orphanedFile }),
      ]),
    );

    expect(found.findings.some((finding) => 'uploadId' in finding && finding.uploadId === resumable.UploadId)).toBe(
      false,
    );

    const repaired = await runDoctor(config, { repair: true, json: false });
    expect(repaired.repairs.every((repair) => repair.repaired)).toBe(true);
    expect(repaired.remaining).toBe(0);
    expect((await runDoctor(config, { repair: false, json: false })).findings).toEqual([]);

    // What the repairs did, as the services would have done it.
    expect(await objectExists(orphanKey, BUCKET)).toBe(false);
    expect(await objectExists(purged.key, BUCKET)).toBe(false);
    expect(await objectExists(lostPurge.key, BUCKET)).toBe(false);
    expect(await objectExists(leaked.key, BUCKET)).toBe(false);
    expect(await objectExists(artifact.key, BUCKET)).toBe(false);
    // Only the pending resumable upload's multipart upload is left open, as it should be.
    expect(await unfinishedUploads(BUCKET)).toEqual([`${resumableKey}#${resumable.UploadId}`]);
    const one = async (query: string, params: unknown[]) => (await sql.query(query, params)).rows[0];
    expect(await one('SELECT ref_count FROM stored_objects WHERE id = $1', [overCounted.id])).toEqual({ ref_count: 1 });
    expect(
      await one('SELECT count(*)::int AS n FROM stored_objects WHERE id = ANY($1)', [[staleUpload.id, lostPurge.id]]),
    ).toEqual({ n: 0 });
    expect(await one('SELECT status, permanent FROM previews WHERE id = $1', [previews[0].id])).toEqual({
      status: 'FAILED',
      permanent: false,
    });
    expect(await one('SELECT count(*)::int AS n FROM archives WHERE id = $1', [archives[0].id])).toEqual({ n: 0 });
    expect(await one('SELECT status FROM responses WHERE id = $1', [responseId])).toEqual({ status: 'failed' });
    expect(
      await one('SELECT deleted_at IS NOT NULL AS deleted FROM container_files WHERE id = $1', [orphanedFile]),
    ).toEqual({ deleted: true });
  });

  it('drops the cached previews and archives of objects gone from the bucket, and nothing a client gave', async () => {
    const lostPdf = await object('READY', 1, { inBucket: false });
    await sql.query(
      `INSERT INTO previews (id, principal_id, sha256, format, version, status, source_object_id, source_filename,
                             source_content_type, object_id, bytes, pdf_sha256, converter)
       VALUES (gen_random_uuid(), $1, $2, 'office', 1, 'READY', gen_random_uuid(), 'a.docx', 'application/msword', $3, 5, $2, 'libreoffice')`,
      [principal, hex(), lostPdf.id],
    );
    const lostZip = await object('READY', 1, { inBucket: false });
    const { sessionId } = await session();
    await sql.query(
      `INSERT INTO archives (id, principal_id, session_id, manifest_hash, status, files_total, bytes_total, object_id)
       VALUES (gen_random_uuid(), $1, $2, $3, 'ready', 1, 5, $4)`,
      [principal, sessionId, hex(), lostZip.id],
    );

    const report = await runDoctor(config, { repair: true, json: false });
    expect(report.findings).toHaveLength(2);
    expect(report.findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'missing_object', objectId: lostPdf.id, cachesOnly: true, repairable: true }),
        expect.objectContaining({ kind: 'missing_object', objectId: lostZip.id, cachesOnly: true, repairable: true }),
      ]),
    );
    expect(report.remaining).toBe(0);
    const { rows } = await sql.query(
      `SELECT (SELECT count(*)::int FROM previews WHERE object_id = ANY($1)) AS previews,
              (SELECT count(*)::int FROM archives WHERE object_id = ANY($1)) AS archives,
              (SELECT count(*)::int FROM stored_objects WHERE id = ANY($1) AND status <> 'PURGED') AS held`,
      [[lostPdf.id, lostZip.id]],
    );
    expect(rows[0]).toEqual({ previews: 0, archives: 0, held: 0 });
    expect((await runDoctor(config, { repair: false, json: false })).findings).toEqual([]);
  });

  it('reports what only a person can settle, repairs none of it, and exits non-zero', async () => {
    const missing = await object('READY', 1, { inBucket: false });
    await file(missing.id);
    const short = await object('READY', 1, { bytes: 7 });
    await file(short.id);
    await sql.query('UPDATE stored_objects SET bytes = 9 WHERE id = $1', [short.id]);
    const purgedButUsed = await object('PURGED', 0, { inBucket: false });
    await file(purgedButUsed.id);

    const report = await runDoctor(config, { repair: true, json: false });
    expect(report.findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'missing_object', objectId: missing.id, repairable: false }),
        expect.objectContaining({ kind: 'size_mismatch', objectId: short.id, bytes: 9, actualBytes: 7 }),
        expect.objectContaining({ kind: 'reference_count', objectId: purgedButUsed.id, repairable: false }),
      ]),
    );
    expect(report.findings).toHaveLength(3);
    expect(report.remaining).toBe(3);

    // The command an operator runs: the built CLI, its exit status and its JSON.
    const env = { ...process.env, ...Object.fromEntries(Object.entries(config).map(([k, v]) => [k, String(v)])) };
    const cli = spawnSync(process.execPath, [join(ROOT, 'dist/apps/storage/src/cli/doctor.js'), '--json'], {
      env,
      encoding: 'utf8',
    });
    expect(cli.status).toBe(1);
    expect(JSON.parse(cli.stdout).findings).toHaveLength(3);

    await sql.query('DELETE FROM files WHERE object_id = ANY($1)', [[missing.id, short.id, purgedButUsed.id]]);
    await sql.query('DELETE FROM stored_objects WHERE id = ANY($1)', [[missing.id, short.id, purgedButUsed.id]]);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: short.key, Body: '' }));
    const clean = spawnSync(process.execPath, [join(ROOT, 'dist/apps/storage/src/cli/doctor.js'), '--repair'], {
      env,
      encoding: 'utf8',
    });
    expect(clean.stdout).toMatch(/repaired: bucket object/);
    expect(clean.status).toBe(0);
  });
});
