import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { api, containerUpload, newSession, upload } from '../support/api';
import { db } from '../support/db';
import { pollUntil } from '../support/poll';
import { objectExists, unfinishedUploads } from '../support/s3';

/**
 * Deletes, copies and artifact commits fired many at a time. Whatever the interleaving: every row goes
 * exactly once (one 200, the rest 404), references are released exactly once (reference counts equal
 * live references), and the bytes another live row still points at survive the purge.
 */

const PARALLEL = 16;
const ROUNDS = 20;

/** Objects whose ref_count differs from the live rows that point at them. */
async function miscountedObjects(objectIds: string[]): Promise<{ id: string; ref_count: number; live: number }[]> {
  const { rows } = await db.query(
    `SELECT o.id::text, o.ref_count,
            (SELECT count(*) FROM files f WHERE f.object_id = o.id AND f.deleted_at IS NULL)
          + (SELECT count(*) FROM container_files c WHERE c.object_id = o.id AND c.deleted_at IS NULL)
          + (SELECT count(*) FROM previews p WHERE p.object_id = o.id)
          + (SELECT count(*) FROM archives a WHERE a.object_id = o.id) AS live
       FROM stored_objects o WHERE o.id = ANY($1::uuid[])`,
    [objectIds],
  );
  return rows.map((row) => ({ ...row, live: Number(row.live) })).filter((row) => row.ref_count !== row.live);
}

async function objectOfFile(fileId: string): Promise<string> {
  const { rows } = await db.query(
    'SELECT object_id::text AS id FROM files WHERE id = $1 UNION SELECT object_id::text FROM container_files WHERE ' +
      'id = $1',
    [fileId],
  );
  return rows[0].id;
}

/** Live container files under a deleted container or session: what a lost race would leave. */
async function liveRowsUnderDeletedContainers(sessionIds: string[]): Promise<number> {
  const { rows } = await db.query(
    `SELECT count(*) AS n FROM container_files f
       JOIN containers c ON c.id = f.container_id JOIN sessions s ON s.id = f.session_id
      WHERE f.deleted_at IS NULL AND (c.deleted_at IS NOT NULL OR s.deleted_at IS NOT NULL) AND f.session_id = ANY($1)`,
    [sessionIds],
  );
  return Number(rows[0].n);
}

/** Waits until none of these objects is waiting for its purge (the worker deleted its bytes, or it lives on). */
async function purgesSettled(objectIds: string[]): Promise<void> {
  await pollUntil(async () => {
    const { rows } = await db.query(
      `SELECT count(*) AS n FROM stored_objects WHERE id = ANY($1::uuid[]) AND status = 'PURGING'`,
      [objectIds],
    );
    return Number(rows[0].n) === 0;
  }, 'purges settled');
}

const statuses = (results: { status: number }[]) => results.map((res) => res.status).sort();
const ok = (results: { status: number }[]) => results.filter((res) => res.status === 200).length;

describe('races between deletes, copies and commits', () => {
  const sessions: string[] = [];
  afterAll(async () => {
    await Promise.all(sessions.map((id) => api('DELETE', `/v1/sessions/${id}`)));
  });

  it(`${PARALLEL} parallel deletes of a file copied into a container, ${ROUNDS} rounds: one 200 each, the copies keep their bytes`, async () => {
    const session = await newSession();
    sessions.push(session.id);
    const kept: { copyId: string; data: Buffer; objectId: string }[] = [];
    const doubled: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const data = randomBytes(2_000 + round);
      const file = await upload('shared.bin', data);
      const copy = await api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: file.id } });
      expect(copy.status).toBe(200);
      kept.push({ copyId: copy.json.id, data, objectId: await objectOfFile(file.id) });
      const results = await Promise.all(Array.from({ length: PARALLEL }, () => api('DELETE', `/v1/files/${file.id}`)));
      expect(
        results.every((res) => res.status === 200 || (res.status === 404 && res.json.error.code === 'not_found')),
      ).toBe(true);
      if (ok(results) !== 1) doubled.push(`round ${round}: ${statuses(results)}`);
    }
    expect(doubled, 'rounds where the delete did not answer 200 exactly once').toEqual([]);
    const objectIds = kept.map((item) => item.objectId);
    expect(await miscountedObjects(objectIds)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // a sweep and any purge have run
    await purgesSettled(objectIds);
    for (const item of kept) {
      const content = await api('GET', `/v1/containers/${session.container_id}/files/${item.copyId}/content`);
      expect(content.status).toBe(200);
      expect(content.body.equals(item.data)).toBe(true);
    }
  });

  it(`${PARALLEL} downloads straight from S3 racing the file's delete and purge, 5 rounds: each is the whole file, a 404 or a cut, never a short 200; then nothing is left`, async () => {
    for (let round = 0; round < 5; round++) {
      const data = randomBytes(2 * 1024 * 1024 + round);
      const file = await upload(`raced-${round}.bin`, data);
      const objectId = await objectOfFile(file.id);
      const {
        rows: [{ storage_key: key }],
      } = await db.query('SELECT storage_key FROM stored_objects WHERE id = $1', [objectId]);
      const outcomes = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) =>
          i === PARALLEL / 2
            ? api('DELETE', `/v1/files/${file.id}`).then((res) => `delete ${res.status}`)
            : api('GET', `/v1/files/${file.id}/content`).then(
                (res) => (res.status === 200 ? (res.body.equals(data) ? 'whole' : 'short 200') : String(res.status)),
                () => 'cut',
              ),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.startsWith('delete'))).toEqual(['delete 200']);
      for (const outcome of outcomes.filter((o) => !o.startsWith('delete')))
        expect(['whole', '404', 'cut']).toContain(outcome);
      await purgesSettled([objectId]);
      expect(await objectExists(key)).toBe(false);
      expect(await miscountedObjects([objectId])).toEqual([]);
      expect((await api('GET', `/v1/files/${file.id}/content`)).status).toBe(404);
    }
  });

  it('deleting a container file, its container and its session at once: each goes once, the uploaded file keeps its bytes', async () => {
    const data = randomBytes(30_000);
    const file = await upload('kept.bin', data);
    const objectId = await objectOfFile(file.id);
    const touched: string[] = [objectId];
    for (let round = 0; round < 4; round++) {
      const session = await newSession();
      sessions.push(session.id);
      const copy = await api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: file.id } });
      const own = await containerUpload(session.container_id, 'own.txt', `round ${round}`);
      touched.push(await objectOfFile(own.id));
      const requests = Array.from({ length: PARALLEL }, (_, i) => {
        if (i % 4 === 0) return api('DELETE', `/v1/sessions/${session.id}`);
        if (i % 4 === 1) return api('DELETE', `/v1/containers/${session.container_id}`);
        if (i % 4 === 2) return api('DELETE', `/v1/containers/${session.container_id}/files/${copy.json.id}`);
        return api('DELETE', `/v1/containers/${session.container_id}/files/${own.id}`);
      });
      const results = await Promise.all(requests);
      const byKind = [0, 1, 2, 3].map((kind) => results.filter((_, i) => i % 4 === kind));
      expect(ok(byKind[0]), 'session deletes').toBe(1);
      expect(ok(byKind[1]), 'container deletes').toBeLessThanOrEqual(1);
      expect(ok(byKind[2]), 'copy deletes').toBeLessThanOrEqual(1);
      expect(ok(byKind[3]), 'artifact deletes').toBeLessThanOrEqual(1);
      expect(await miscountedObjects(touched)).toEqual([]);
    }
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await purgesSettled(touched);
    const content = await api('GET', `/v1/files/${file.id}/content`);
    expect(content.status).toBe(200);
    expect(content.body.equals(data)).toBe(true);
    expect(await miscountedObjects(touched)).toEqual([]);
  });

  it(`deletes at the instant a copied file expires, ${ROUNDS / 2} rounds: it goes once, by a delete or by the sweep`, async () => {
    const session = await newSession();
    sessions.push(session.id);
    const kept: { copyId: string; data: Buffer; objectId: string }[] = [];
    const doubled: string[] = [];
    for (let round = 0; round < ROUNDS / 2; round++) {
      const data = randomBytes(1_000 + round);
      const file = await upload('expiring.bin', data, {
        fields: { 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': '3600' },
      });
      const copy = await api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: file.id } });
      kept.push({ copyId: copy.json.id, data, objectId: await objectOfFile(file.id) });
      // Expiry is at least an hour through the API: move it to just ahead of now, then race it.
      await db.query(`UPDATE files SET expires_at = now() + interval '300 milliseconds' WHERE id = $1`, [file.id]);
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) =>
          new Promise((resolve) => setTimeout(resolve, 200 + i * 12)).then(() => api('DELETE', `/v1/files/${file.id}`)),
        ),
      );
      if (ok(results) > 1) doubled.push(`round ${round}: ${statuses(results)}`);
    }
    expect(doubled, 'rounds where more than one delete answered 200').toEqual([]);
    const objectIds = kept.map((item) => item.objectId);
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // the sweep has expired what no delete took
    await purgesSettled(objectIds);
    expect(await miscountedObjects(objectIds)).toEqual([]);
    for (const item of kept) {
      const content = await api('GET', `/v1/containers/${session.container_id}/files/${item.copyId}/content`);
      expect(content.status).toBe(200);
      expect(content.body.equals(item.data)).toBe(true);
    }
  });

  it(`copies by file_id and artifact uploads racing container and session deletes, ${ROUNDS} rounds: no live row under a deleted container`, async () => {
    const file = await upload('source.txt', 'copy me');
    const objectId = await objectOfFile(file.id);
    const roundSessions: string[] = [];
    let copiesLanded = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const session = await newSession();
      roundSessions.push(session.id);
      sessions.push(session.id);
      const deleter = round % 2 === 0 ? `/v1/containers/${session.container_id}` : `/v1/sessions/${session.id}`;
      const results = await Promise.all([
        api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: file.id } }),
        api('DELETE', deleter),
        api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: file.id } }),
        containerUpload(session.container_id, 'raced.txt', `round ${round}`).then(
          () => ({ status: 200 }),
          () => ({ status: 404 }),
        ),
      ]);
      expect(results[1].status).toBe(200);
      for (const res of [results[0], results[2], results[3]]) expect([200, 404]).toContain(res.status);
      copiesLanded += ok([results[0], results[2]]);
    }
    expect(await liveRowsUnderDeletedContainers(roundSessions)).toBe(0);
    expect(await miscountedObjects([objectId])).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await purgesSettled([objectId]);
    const { rows } = await db.query('SELECT ref_count, status FROM stored_objects WHERE id = $1', [objectId]);
    expect(rows[0]).toEqual({ ref_count: 1, status: 'READY' });
    expect((await api('GET', `/v1/files/${file.id}/content`)).body.toString()).toBe('copy me');
    console.info(`races: ${copiesLanded} of ${2 * ROUNDS} copies landed before their container went`);
  });
});

describe('resumable uploads completed and cancelled many at once', () => {
  const MiB = 1024 * 1024;

  async function part(uploadId: string, data: Buffer): Promise<string> {
    const form = new FormData();
    form.append('data', new Blob([data]), 'part');
    const res = await api('POST', `/v1/uploads/${uploadId}/parts`, { form });
    if (res.status !== 200) throw new Error(`part failed: ${res.status} ${res.body}`);
    return res.json.id;
  }

  it('16 completes and cancels at once, 10 rounds: one outcome wins, the rows and the bucket agree with it', async () => {
    const outcomes = { completed: 0, cancelled: 0 };
    for (let round = 0; round < 10; round++) {
      // Two blocks of the upload's multipart upload and a small last part (an object of its own).
      const data = randomBytes(12 * MiB + 1000);
      const created = await api('POST', '/v1/uploads', {
        json: { filename: 'race.bin', purpose: 'user_data', bytes: data.length, mime_type: 'application/octet-stream' },
      });
      const uploadId = created.json.id;
      const ids = [
        await part(uploadId, data.subarray(0, 6 * MiB)),
        await part(uploadId, data.subarray(6 * MiB, 12 * MiB)),
        await part(uploadId, data.subarray(12 * MiB)),
      ];
      const { rows: keyRows } = await db.query(
        `SELECT u.storage_key AS upload_key, array_agg(o.storage_key) FILTER (WHERE o.storage_key IS NOT NULL) AS part_keys
           FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id LEFT JOIN stored_objects o ON o.id = p.object_id
          WHERE u.id = $1 GROUP BY u.storage_key`,
        [uploadId],
      );
      const uploadKey: string = keyRows[0].upload_key;
      const partKeys: string[] = keyRows[0].part_keys ?? [];
      expect(partKeys).toHaveLength(1);

      const answers = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) =>
          i % 2 === 0
            ? api('POST', `/v1/uploads/${uploadId}/complete`, { json: { part_ids: ids } })
            : api('POST', `/v1/uploads/${uploadId}/cancel`),
        ),
      );
      const completes = answers.filter((_, i) => i % 2 === 0);
      const cancels = answers.filter((_, i) => i % 2 === 1);
      const { rows } = await db.query('SELECT status, file_id FROM uploads WHERE id = $1', [uploadId]);
      const final = rows[0];
      expect(['completed', 'cancelled']).toContain(final.status);
      outcomes[final.status as 'completed' | 'cancelled']++;
      const everyAnswer = answers.map((answer) => answer.status);
      expect(everyAnswer.every((status) => status === 200 || status === 409)).toBe(true);
      if (final.status === 'completed') {
        // Every complete that answered 200 gives the same file; no cancel succeeded.
        const files = new Set(completes.filter((a) => a.status === 200).map((a) => a.json.file.id));
        expect([...files]).toEqual([final.file_id]);
        expect(cancels.every((a) => a.status === 409)).toBe(true);
        const content = await api('GET', `/v1/files/${final.file_id}/content`);
        expect(content.body.equals(data)).toBe(true);
      } else {
        expect(completes.every((a) => a.status === 409)).toBe(true);
        expect(cancels.some((a) => a.status === 200)).toBe(true);
        const { rows: kept } = await db.query(
          'SELECT count(*) AS n FROM files f JOIN stored_objects o ON o.id = f.object_id WHERE o.storage_key = $1',
          [uploadKey],
        );
        expect(Number(kept[0].n)).toBe(0);
      }
      // Nothing of the parts is left: no part rows, no part object, no unfinished multipart upload.
      const { rows: left } = await db.query('SELECT count(*) AS n FROM upload_parts WHERE upload_id = $1', [uploadId]);
      expect(Number(left[0].n)).toBe(0);
      await pollUntil(async () => {
        const unfinished = (await unfinishedUploads()).some((entry) => entry.startsWith(`${uploadKey}#`));
        return !unfinished && !(await objectExists(partKeys[0]));
      }, 'the parts leave the bucket');
      if (final.status === 'completed') {
        expect(await objectExists(uploadKey)).toBe(true);
        await api('DELETE', `/v1/files/${final.file_id}`);
      } else expect(await objectExists(uploadKey)).toBe(false);
    }
    console.log(`complete vs cancel, 10 rounds: ${outcomes.completed} completed, ${outcomes.cancelled} cancelled`);
  });
});
