import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../support/api';
import { db, dbNow } from '../support/db';
import { KEYS, ownQueues, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { unfinishedUploads } from '../support/s3';
import { slowUpload } from '../support/slow-upload';
import { Stack } from '../support/stack';

/**
 * SIGTERM, as Kubernetes and compose stop a service: readiness fails and no new connection is taken;
 * what is in flight gets SHUTDOWN_GRACE_MS to finish, or is answered 503 (when its answer has not begun) and
 * cut, with nothing left behind; a worker's job
 * that cannot finish in time goes back to the queue, and another worker finishes it.
 */
const MiB = 1024 * 1024;
// Queues of its own: only this file's workers take its jobs.
const queues = ownQueues('graceful-drain');

async function leftObjects(since: Date): Promise<number> {
  const { rows } = await db.query(
    `SELECT count(*) AS n FROM stored_objects o WHERE o.created_at >= $1 AND o.status IN ('UPLOADING', 'PURGING', 'READY')
        AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
        AND NOT EXISTS (SELECT 1 FROM container_files c WHERE c.object_id = o.id)
        AND NOT EXISTS (SELECT 1 FROM previews p WHERE p.object_id = o.id)
        AND NOT EXISTS (SELECT 1 FROM archives a WHERE a.object_id = o.id)`,
    [since],
  );
  return Number(rows[0].n);
}

describe('SIGTERM to the gateway during a 200 MiB upload', () => {
  const bytes = 200 * MiB;
  const settings = { ...queues, UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(256 * MiB) };

  it('that fits the grace period: the upload completes, then the gateway exits 0', async () => {
    const stack = new Stack(testPort(19780), { ...settings, SHUTDOWN_GRACE_MS: '60000' });
    await stack.start(['storage', 'gateway']);
    try {
      const upload = await slowUpload({ port: stack.port('gateway'), key: KEYS.alice, bytes, seconds: 4 });
      await new Promise((resolve) => setTimeout(resolve, 800));
      const exit = stack.terminate('gateway');
      // No new connection is taken once it drains.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await expect(fetch(`${stack.baseUrl}/readyz`)).rejects.toThrow();
      expect(await upload.done).toBe(200);
      expect(upload.exchange.text).toContain(`"bytes":${bytes}`);
      expect(await exit).toBe(0);
    } finally {
      await stack.stop();
    }
  });

  it('that does not: the client gets the 503 JSON error, and neither a file nor an object is left', async () => {
    const since = await dbNow();
    // Other files of the tier may hold resumable uploads open meanwhile: only one this test made counts.
    const openBefore = new Set(await unfinishedUploads());
    const openSinceStart = async () =>
      (await unfinishedUploads()).filter((upload) => !openBefore.has(upload) && upload.startsWith('objects/'));
    const stack = new Stack(testPort(19780), { ...settings, SHUTDOWN_GRACE_MS: '1500' });
    await stack.start(['storage', 'gateway']);
    try {
      const upload = await slowUpload({ port: stack.port('gateway'), key: KEYS.alice, bytes, seconds: 10 });
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(await stack.terminate('gateway')).toBe(0);
      expect(await upload.done).toBe(503);
      const text = upload.exchange.text;
      expect(text.toLowerCase()).toContain('retry-after: 1');
      expect(text).toContain('"code":"service_unavailable"');
      await stack.start(['worker']);
      await pollUntil(
        async () => (await leftObjects(since)) === 0 && (await openSinceStart()).length === 0,
        'nothing left of the cut upload',
        30_000,
      );
      const { rows } = await db.query(
        `SELECT count(*) AS n FROM files WHERE filename = 'draining.bin' AND created_at >= $1`,
        [since],
      );
      expect(Number(rows[0].n)).toBe(0);
    } finally {
      await stack.stop();
    }
  });
});

describe('SIGTERM to a worker during an archive build and a conversion', () => {
  const first = new Stack(testPort(19880), {
    ...queues,
    SHUTDOWN_GRACE_MS: '500',
    ARCHIVE_WAIT_MS: '0',
    PREVIEW_TIMEOUT_MS: '1000',
    UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(16 * MiB),
    UHP_MAX_ARCHIVE_BUILDS: '100',
    UHP_MAX_PENDING_PREVIEWS: '100',
  });
  // A second worker on the same queues, started once the first has taken the job.
  const second = new Stack(testPort(19980), {
    ...queues,
    STORAGE_URL: `http://127.0.0.1:${testPort(19880) + 1}`,
    SHUTDOWN_GRACE_MS: '500',
  });
  const base = () => first.baseUrl;
  beforeAll(() => first.start());
  afterAll(async () => {
    await second.stop();
    await first.stop();
  });

  it('the build in flight goes back to the queue and the other worker finishes it: one archive, no orphan, no stuck row', async () => {
    const since = await dbNow();
    const session = (await api('POST', '/v1/sessions', { json: {}, base: base() })).json;
    for (let i = 0; i < 6; i++) {
      const form = new FormData();
      form.append('file', new Blob([randomBytes(12 * MiB)]), `part-${i}.bin`);
      expect((await api('POST', `/v1/containers/${session.container_id}/files`, { form, base: base() })).status).toBe(
        200,
      );
    }
    const asked = await api('GET', `/v1/sessions/${session.id}/files/archive`, { base: base() });
    expect(asked.status, JSON.stringify(asked.json)).toBe(202);
    await pollUntil(async () => {
      const { rows } = await db.query(`SELECT status, files_done FROM archives WHERE session_id = $1`, [session.id]);
      return rows[0]?.status === 'building';
    }, 'build under way');
    await second.start(['worker']);
    expect(await first.terminate('worker')).toBe(0);
    const archive = await pollUntil(
      async () => {
        const res = await api('GET', `/v1/sessions/${session.id}/files/archive`, { base: base() });
        return res.status === 200 ? res : null;
      },
      'archive built by the other worker',
      90_000,
    );
    expect(archive!.headers.get('content-type')).toBe('application/zip');
    const { rows } = await db.query(`SELECT status, object_id FROM archives WHERE session_id = $1`, [session.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].status).toBe('ready');
    await pollUntil(async () => (await leftObjects(since)) === 0, 'no orphan object of the interrupted build', 30_000);
    await first.start(['worker']);
    await second.stop();
  });

  it('the conversion in flight goes back to the queue and the other worker converts it', async () => {
    const session = (await api('POST', '/v1/sessions', { json: {}, base: base() })).json;
    const form = new FormData();
    const lines = Array.from({ length: 60_000 }, (_, i) => `line ${i} ${randomBytes(24).toString('hex')}`).join('\n');
    form.append('file', new Blob([lines]), 'long.txt');
    const file = (await api('POST', `/v1/containers/${session.container_id}/files`, { form, base: base() })).json;
    const preview = () => api('GET', `/v1/containers/${session.container_id}/files/${file.id}/pdf`, { base: base() });
    expect((await preview()).status).toBe(502);
    await second.start(['worker']);
    expect(await first.terminate('worker')).toBe(0);
    const done = await pollUntil(
      async () => {
        const res = await preview();
        return res.status === 200 ? res : null;
      },
      'preview converted by the other worker',
      120_000,
    );
    expect(done!.body.subarray(0, 5).toString()).toBe('%PDF-');
    const { rows } = await db.query(
      `SELECT count(*) AS n FROM previews WHERE status = 'PENDING' AND principal_id = (SELECT principal_id FROM container_files WHERE id = $1)`,
      [file.id],
    );
    expect(Number(rows[0].n)).toBe(0);
  });
});
