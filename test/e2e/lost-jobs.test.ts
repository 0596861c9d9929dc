import { Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE } from '@app/contracts';
import { scratchDatabase } from '../support/db';
import { TEST_BUCKET, TEST_REDIS_URL, ownQueues, testPort } from '../support/env';
import { askPreviewAndArchive, expectJobsDone, expectNothingLeftOver, newArtifact } from '../support/redis-workload';
import { emptyBucket, ensureBucket } from '../support/s3';
import { Stack } from '../support/stack';

// A job Redis lost after the gateway had it acknowledged (a failover to a replica it had not reached, a restart
// without persistence) must not leave its preview or archive waiting for ever: the worker's sweep queues the job of
// every one still waiting after LOST_JOB_SECONDS again. Here the jobs are taken out of Redis by hand while no worker
// runs; the rows must still end done, with nobody asking again.
const BUCKET = `${TEST_BUCKET}-lost-jobs`;
const lane = ownQueues('lost-jobs');
let database: Awaited<ReturnType<typeof scratchDatabase>>;
let sql: pg.Pool;
let stack: Stack;

beforeAll(async () => {
  await ensureBucket(BUCKET);
  await emptyBucket(BUCKET);
  database = await scratchDatabase('lost_jobs');
  sql = new pg.Pool({ connectionString: database.url, max: 2 });
  stack = new Stack(testPort(20580), {
    ...lane,
    DATABASE_URL: database.url,
    S3_BUCKET: BUCKET,
    ARCHIVE_WAIT_MS: '0',
    PREVIEW_TIMEOUT_MS: '1000',
    LOST_JOB_SECONDS: '2',
    SWEEP_INTERVAL_MS: '1000',
  });
  await stack.start();
  // Stopped once it has told the database which converters it has (the gateway asks that before it queues).
  await stack.terminate('worker');
});

afterAll(async () => {
  await stack?.stop();
  await sql?.end();
  await database?.drop();
  await emptyBucket(BUCKET).catch(() => undefined);
});

describe('jobs Redis lost', () => {
  it('previews and archives still waiting get their jobs again from the sweep, and complete', async () => {
    const items = await Promise.all([1, 2, 3].map((n) => newArtifact(stack.baseUrl, `lost-${n}`)));
    await Promise.all(items.map((item) => askPreviewAndArchive(stack.baseUrl, item)));
    // Every job the gateway queued, gone from Redis as if the primary that took them had failed over.
    for (const name of [QUEUE.preview, QUEUE.archive]) {
      const queue = new Queue(name, { connection: { url: TEST_REDIS_URL }, prefix: lane.REDIS_KEY_PREFIX });
      try {
        expect(await queue.count()).toBeGreaterThan(0);
        await queue.obliterate({ force: true });
        expect(await queue.count()).toBe(0);
      } finally {
        await queue.close();
      }
    }
    await stack.start(['worker']);
    await expectJobsDone(sql, items, 60_000);
    await expectNothingLeftOver(database.url, BUCKET);
  });
});
