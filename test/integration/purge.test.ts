import { PutObjectCommand } from '@aws-sdk/client-s3';
import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB, JOBS, QUEUE } from '@app/contracts';
import { db } from '../support/db';
import { TEST_BUCKET, TEST_REDIS_URL, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { objectExists, s3 } from '../support/s3';
import { Stack } from '../support/stack';

// Storage and worker only: the purge path from a queued job to the bucket, with real Redis, Postgres and S3.
const stack = new Stack(testPort(18380), { SWEEP_INTERVAL_MS: '1000' });
const queue = new Queue(QUEUE.purge, { connection: { url: TEST_REDIS_URL } });

async function purgingObject(): Promise<{ id: string; key: string }> {
  const key = `objects/${randomUUID()}`;
  await s3.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: key, Body: 'bytes to purge' }));
  const { rows: principals } = await db.query(
    `INSERT INTO principals (id, name) VALUES (gen_random_uuid(), $1) RETURNING id`,
    [`purge-${randomUUID()}`],
  );
  const { rows } = await db.query(
    `INSERT INTO stored_objects (id, principal_id, storage_key, status, bytes, ref_count) VALUES (gen_random_uuid(), $1, $2, 'PURGING', 14, 0) RETURNING id::text`,
    [principals[0].id, key],
  );
  return { id: rows[0].id, key };
}

beforeAll(() => stack.start(['storage', 'worker']));
afterAll(async () => {
  await queue.close();
  await stack.stop();
});

describe('purge through the worker', () => {
  it('a queued purge deletes the bytes and the row', async () => {
    const object = await purgingObject();
    await queue.add(
      JOB.purgeObject,
      { objectId: object.id },
      { jobId: JOBS[JOB.purgeObject].jobId({ objectId: object.id }) },
    );
    await pollUntil(async () => !(await objectExists(object.key)), 'object deleted from the bucket', 20_000);
    await pollUntil(
      async () => (await db.query('SELECT 1 FROM stored_objects WHERE id = $1', [object.id])).rowCount === 0,
      'row deleted',
      20_000,
    );
  });

  it('the sweep finds a PURGING object whose job was lost', async () => {
    const object = await purgingObject();
    await db.query(`UPDATE stored_objects SET updated_at = now() - interval '5 minutes' WHERE id = $1`, [object.id]);
    await pollUntil(async () => !(await objectExists(object.key)), 'lost purge recovered by the sweep', 30_000);
  });

  it('never deletes an object that still has references', async () => {
    const object = await purgingObject();
    await db.query(`UPDATE stored_objects SET status = 'READY', ref_count = 1 WHERE id = $1`, [object.id]);
    const job = await queue.add(
      JOB.purgeObject,
      { objectId: object.id },
      { jobId: `${JOBS[JOB.purgeObject].jobId({ objectId: object.id })}-check` },
    );
    await pollUntil(async () => (await job.getState()) === 'completed', 'job done', 20_000);
    expect(await job.isCompleted()).toBe(true);
    expect(await objectExists(object.key)).toBe(true);
  });
});
