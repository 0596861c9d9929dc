import { describe, expect, it, vi } from 'vitest';
import { JOB } from '@app/contracts';
import { inMemoryPlatform, silentLogger } from '../../../../test/fakes/platform';
import { fakeJob, processorContext, runAttempts } from '../../../../test/fakes/worker';
import { PurgeProcessor } from './purge.processor';
import { PurgeService } from './purge.service';

/** A purge processor over the in-memory platform; purges and sweeps are what the test says. */
function setUp() {
  const platform = inMemoryPlatform();
  const unused = null as never;
  const purge = new PurgeService(platform.objects, platform.store, silentLogger);
  const { context, counted } = processorContext();
  const processor = new PurgeProcessor(purge, unused, platform.jobs, context);
  const job = fakeJob(JOB.purgeObject, { objectId: platform.memory.uuid() }, 8);
  return { purge, processor, job, counted };
}

describe('PurgeProcessor uses the give-up policy of QueueProcessor', () => {
  it('a purge that keeps failing is retried for all its attempts, then fails with its own error', async () => {
    const { purge, processor, job, counted } = setUp();
    const failure = new Error('S3 answered 503 SlowDown');
    const purgeObject = vi.spyOn(purge, 'purgeObject').mockRejectedValue(failure);
    const result = await runAttempts(processor, job);
    expect(result.attempts).toEqual(Array(8).fill('failed'));
    expect(result.error).toBe(failure);
    expect(purgeObject).toHaveBeenCalledTimes(8);
    expect(await counted()).toEqual({ 'purge-object failed': 8 });
  });

  it('a purge that succeeds (its object already gone) is counted by its outcome', async () => {
    const { processor, job, counted } = setUp();
    expect(await runAttempts(processor, job)).toMatchObject({ attempts: ['completed'], value: 'gone' });
    expect(await counted()).toEqual({ 'purge-object gone': 1 });
  });
});
