import { type Job, WaitingError, type Worker } from 'bullmq';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppLogger } from '@app/common';

/** How long jobs aborted at the end of the grace period get to wind down before the worker closes. */
const WIND_DOWN_MS = 5_000;

/**
 * The jobs one processor is running, and how they end when the process stops: the worker takes no new
 * job; the running ones get the grace period to finish; whatever still runs then is aborted and handed
 * back to the queue (moved to wait, not failed, no attempt spent), so another worker takes it. Handlers
 * honour the signal by stopping and keeping nothing they had half done.
 */
export class ActiveJobs {
  private readonly running = new Map<Job, AbortController>();
  private handingBack = false;

  async run<T>(job: Job, token: string | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const abort = new AbortController();
    this.running.set(job, abort);
    try {
      return await work(abort.signal);
    } catch (error) {
      if (abort.signal.aborted && this.handingBack) {
        await job.moveToWait(token);
        throw new WaitingError('handed back: the worker is stopping');
      }
      throw error;
    } finally {
      this.running.delete(job);
    }
  }

  get count(): number {
    return this.running.size;
  }

  async drain(worker: Worker, grace: AbortSignal, logger: AppLogger): Promise<void> {
    await worker.pause(true);
    while (this.running.size > 0 && !grace.aborted) await sleep(50);
    if (this.running.size > 0) {
      this.handingBack = true;
      logger.warn(
        { queue: worker.name, jobs: [...this.running.keys()].map((job) => ({ id: job.id, name: job.name })) },
        'grace period over: handing the jobs in flight back to the queue',
      );
      for (const abort of this.running.values()) abort.abort(new Error('the worker is stopping'));
      const deadline = Date.now() + WIND_DOWN_MS;
      while (this.running.size > 0 && Date.now() < deadline) await sleep(50);
    }
    await worker.close(this.running.size > 0);
  }
}
