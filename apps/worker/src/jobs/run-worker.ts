import type { Worker } from 'bullmq';

/**
 * Starts a queue's worker with the claim it holds on its jobs (JOB_LOCK_MS): a job whose worker died is
 * taken over once its claim lapses, and found by the stalled-job check that runs as often. @nestjs/bullmq
 * builds the worker from static decorator options, so the configured values are set here, before it runs
 * (the lock manager copies them when made, hence it is made again).
 */
export function runWorker(worker: Worker, lockMs: number): void {
  Object.assign(worker.opts, { lockDuration: lockMs, lockRenewTime: Math.floor(lockMs / 2), stalledInterval: lockMs });
  (worker as unknown as { createLockManager(): void }).createLockManager();
  void worker.run();
}
