import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE } from '@app/contracts';
import { TEST_REDIS_URL, ownQueues, testPort } from '../support/env';
import { askPreviewAndArchive, expectJobsDone, expectNothingLeftOver, newArtifact } from '../support/redis-workload';
import { ScratchStack } from '../support/scratch-stack';

// A job Redis lost after the gateway had it acknowledged (a failover to a replica it had not reached, a restart
// without persistence) must not leave its preview or archive waiting for ever: the worker's sweep queues the job of
// every one still waiting after LOST_JOB_SECONDS again. Here the jobs are taken out of Redis by hand while no worker
// runs; the rows must still end done, with nobody asking again.
const lane = ownQueues('lost-jobs');
const scratch = new ScratchStack('lost_jobs', testPort(20580));

beforeAll(async () => {
  const stack = await scratch.start({
    ...lane,
    ARCHIVE_WAIT_MS: '0',
    PREVIEW_TIMEOUT_MS: '1000',
    LOST_JOB_SECONDS: '2',
    SWEEP_INTERVAL_MS: '1000',
  });
  // Stopped once it has told the database which converters it has (the gateway asks that before it queues).
  await stack.terminate('worker');
});

afterAll(() => scratch.stop());

describe('jobs Redis lost', () => {
  it('previews and archives still waiting get their jobs again from the sweep, and complete', async () => {
    const items = await Promise.all([1, 2, 3].map((n) => newArtifact(scratch.stack.baseUrl, `lost-${n}`)));
    await Promise.all(items.map((item) => askPreviewAndArchive(scratch.stack.baseUrl, item)));
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
    await scratch.stack.start(['worker']);
    await expectJobsDone(scratch.sql, items, 60_000);
    await expectNothingLeftOver(scratch.databaseUrl, scratch.bucket);
  });
});
