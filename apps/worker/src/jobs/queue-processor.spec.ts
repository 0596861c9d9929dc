import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { JobHandlers } from '@app/queue';
import { JOB, QUEUE } from '@app/contracts';
import { fakeJob, processorContext, runAttempts, unstartedWorker, workerConfig } from '../../../../test/fakes/worker';
import { ProcessorContext, QueueProcessor, type GiveUpHandlers, type QueueOptions } from './queue-processor';

const ARCHIVE_ID = '0b6f4a3c-7d1e-4c2a-9f3b-5e8d7c6b5a41';

class PermanentError extends Error {}

/** A processor of the archive queue whose handler does what each test says, recording what it marked failed. */
class TestProcessor extends QueueProcessor<typeof QUEUE.archive> {
  readonly markedFailed: string[] = [];
  work: (signal: AbortSignal) => Promise<unknown> = async () => 'built';
  markFailed: (reason: string) => Promise<void> = async (reason) => void this.markedFailed.push(reason);

  protected readonly handlers: JobHandlers<typeof QUEUE.archive> = {
    [JOB.buildArchive]: (_payload, _job, signal) => this.work(signal),
  };

  protected override readonly giveUps: GiveUpHandlers<typeof QUEUE.archive> = {
    [JOB.buildArchive]: (_payload, error) => this.markFailed(error.message),
  };

  constructor(context: ProcessorContext, options: Partial<QueueOptions<typeof QUEUE.archive>> = {}) {
    super(context, {
      queue: QUEUE.archive,
      concurrency: (config) => config.ARCHIVE_CONCURRENCY,
      isPermanent: (error) => error instanceof PermanentError,
      ...options,
    });
  }
}

function setUp(options: Partial<QueueOptions<typeof QUEUE.archive>> = {}) {
  const platform = processorContext(workerConfig({ ARCHIVE_CONCURRENCY: '3', JOB_LOCK_MS: '8000' }));
  const processor = new TestProcessor(platform.context, options);
  const job = fakeJob(JOB.buildArchive, { archiveId: ARCHIVE_ID }, 3);
  return { ...platform, processor, job };
}

describe('QueueProcessor: the give-up policy', () => {
  it('a job that succeeds is counted by its outcome, and nothing is marked failed', async () => {
    const { processor, job, counted } = setUp();
    expect(await runAttempts(processor, job)).toMatchObject({ attempts: ['completed'], value: 'built' });
    expect(processor.markedFailed).toEqual([]);
    expect(await counted()).toEqual({ 'build-archive built': 1 });
  });

  it('a retryable failure is retried with the same error, and marked failed only when the last attempt fails', async () => {
    const { processor, job, counted } = setUp();
    const failure = new Error('the storage service answered 503');
    processor.work = async () => {
      // Marked only once the third (last) attempt has failed.
      expect(processor.markedFailed).toEqual([]);
      throw failure;
    };
    const result = await runAttempts(processor, job);
    expect(result.attempts).toEqual(['failed', 'failed', 'failed']);
    expect(result.error).toBe(failure);
    expect(processor.markedFailed).toEqual(['the storage service answered 503']);
    expect(await counted()).toEqual({ 'build-archive failed': 3 });
  });

  it('a retryable failure that succeeds on a later attempt is never marked failed', async () => {
    const { processor, job } = setUp();
    processor.work = async () => {
      if (job.attemptsMade < 1) throw new Error('the converter crashed');
      return 'built';
    };
    expect((await runAttempts(processor, job)).attempts).toEqual(['failed', 'completed']);
    expect(processor.markedFailed).toEqual([]);
  });

  it("a permanent failure (the queue's isPermanent) is marked failed at once and fails for good, not retried", async () => {
    const { processor, job } = setUp();
    processor.work = async () => {
      throw new PermanentError('not a zip this worker could ever build');
    };
    const result = await runAttempts(processor, job);
    expect(result.attempts).toEqual(['failed for good']);
    expect(result.error).toBeInstanceOf(UnrecoverableError);
    expect(result.error?.message).toBe('not a zip this worker could ever build');
    expect(processor.markedFailed).toEqual(['not a zip this worker could ever build']);
  });

  it('an UnrecoverableError is permanent on every queue, whatever isPermanent says', async () => {
    const { processor, job } = setUp({ isPermanent: undefined });
    const failure = new UnrecoverableError('the row says this can never be built');
    processor.work = async () => {
      throw failure;
    };
    const result = await runAttempts(processor, job);
    expect([result.attempts, result.error]).toEqual([['failed for good'], failure]);
    expect(processor.markedFailed).toEqual(['the row says this can never be built']);
  });

  it('a job whose payload never reached its handler fails for good with nothing to mark', async () => {
    const { processor, counted } = setUp();
    const job = fakeJob(JOB.buildArchive, { archiveId: 'not-a-uuid' }, 3);
    const result = await runAttempts(processor, job);
    expect(result.attempts).toEqual(['failed for good']);
    expect(processor.markedFailed).toEqual([]);
    expect(await counted()).toEqual({ 'build-archive failed': 1 });
  });

  it("a failure to mark the row failed is the worker's to log: the job fails with its own error", async () => {
    const { processor, job } = setUp();
    const failure = new PermanentError('corrupt');
    processor.work = async () => {
      throw failure;
    };
    processor.markFailed = async () => {
      throw new Error('Postgres is down');
    };
    expect((await runAttempts(processor, job)).error?.message).toBe('corrupt');
  });

  it('a job aborted because the worker stops is handed back untouched: not marked failed, whatever its attempt', async () => {
    const { processor, job, shutdown } = setUp();
    const { worker } = unstartedWorker();
    Object.assign(processor, { _worker: worker });
    processor.onApplicationBootstrap();
    job.attemptsMade = 2; // its last attempt
    const moved: string[] = [];
    Object.assign(job, { moveToWait: async (token: string) => void moved.push(token) });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    processor.work = (signal) =>
      new Promise((_resolve, reject) => {
        started();
        signal.addEventListener('abort', () => reject(new PermanentError('killed mid-build')), { once: true });
      });
    const processing = processor.process(job, 'token-9');
    const handedBack = expect(processing).rejects.toMatchObject({ name: 'WaitingError' });
    await running;
    const grace = new AbortController();
    grace.abort();
    await shutdown.drain(grace.signal);
    await handedBack;
    expect(moved).toEqual(['token-9']);
    expect(processor.markedFailed).toEqual([]);
  });
});

describe('QueueProcessor: boot', () => {
  it("runs the worker with the queue's concurrency and the configured claim on its jobs, and drains it on shutdown", async () => {
    const { processor, shutdown } = setUp();
    const { worker, calls } = unstartedWorker();
    Object.assign(processor, { _worker: worker });
    processor.onApplicationBootstrap();
    expect(worker.concurrency).toBe(3);
    expect(worker.opts).toMatchObject({ lockDuration: 8_000, lockRenewTime: 4_000, stalledInterval: 8_000 });
    expect(calls).toEqual(['run']);
    await shutdown.drain(new AbortController().signal);
    expect(calls).toEqual(['run', 'pause', 'close']);
  });

  it('a queue this worker has turned off is left alone: the worker never runs', () => {
    const { processor } = setUp({ isEnabled: () => false });
    const { worker, calls } = unstartedWorker();
    Object.assign(processor, { _worker: worker });
    processor.onApplicationBootstrap();
    expect(calls).toEqual([]);
  });
});
