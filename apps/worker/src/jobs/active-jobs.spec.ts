import { type Job, WaitingError, type Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../test/fakes/platform';
import { ActiveJobs } from './active-jobs';

/** The part of a BullMQ Worker and Job that ActiveJobs touches, recording what it was asked to do. */
function fakeWorker() {
  const calls: string[] = [];
  const worker = {
    name: 'archive',
    pause: async (doNotWaitActive?: boolean) => void calls.push(`pause(${doNotWaitActive})`),
    close: async (force?: boolean) => void calls.push(`close(${force})`),
  } as unknown as Worker;
  return { worker, calls };
}

function fakeJob(id: string) {
  const movedToWait: (string | undefined)[] = [];
  const job = { id, name: 'build-archive', moveToWait: async (token?: string) => movedToWait.push(token) };
  return { job: job as unknown as Job, movedToWait };
}

/** A handler that runs until its signal aborts (then throws, as handlers do), or until `finish` is called. */
function controllableWork() {
  let finish!: (value: string) => void;
  const work = (signal: AbortSignal) =>
    new Promise<string>((resolve, reject) => {
      finish = resolve;
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  return { work, finish: (value: string) => finish(value) };
}

describe('ActiveJobs', () => {
  it('a job that finishes within the grace period completes; the worker closes without force', async () => {
    const active = new ActiveJobs();
    const { worker, calls } = fakeWorker();
    const { job, movedToWait } = fakeJob('1');
    const handler = controllableWork();
    const running = active.run(job, 'token-1', handler.work);
    expect(active.count).toBe(1);

    const grace = new AbortController();
    const drained = active.drain(worker, grace.signal, silentLogger);
    handler.finish('built');
    await expect(running).resolves.toBe('built');
    await drained;
    expect(calls).toEqual(['pause(true)', 'close(false)']);
    expect(movedToWait).toEqual([]);
    expect(active.count).toBe(0);
  });

  it('a job still running when the grace period ends is aborted and handed back to the queue, not failed', async () => {
    const active = new ActiveJobs();
    const { worker, calls } = fakeWorker();
    const { job, movedToWait } = fakeJob('2');
    const handler = controllableWork();
    const running = active.run(job, 'token-2', handler.work);

    const grace = new AbortController();
    const drained = active.drain(worker, grace.signal, silentLogger);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(calls).toEqual(['pause(true)']); // still waiting for the job within the grace period
    grace.abort();
    await expect(running).rejects.toBeInstanceOf(WaitingError);
    await drained;
    expect(movedToWait).toEqual(['token-2']);
    expect(calls).toEqual(['pause(true)', 'close(false)']);
  });

  it('a job that fails on its own while the worker runs is not handed back: the error goes to BullMQ', async () => {
    const active = new ActiveJobs();
    const { job, movedToWait } = fakeJob('3');
    const failure = new Error('the converter crashed');
    await expect(
      active.run(job, 'token-3', async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(movedToWait).toEqual([]);
    expect(active.count).toBe(0);
  });
});
