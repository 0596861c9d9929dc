import { Worker } from 'bullmq';

/**
 * Gives a queue's worker the claim it holds on its jobs (JOB_LOCK_MS): a job whose worker died is taken over
 * once its claim lapses, and found by the stalled-job check that runs as often.
 *
 * The one use of a BullMQ internal, kept here. @nestjs/bullmq builds the worker from static decorator options and
 * will not take them from config (https://github.com/nestjs/bull/issues/2583), so the values are set on the built
 * worker before it runs. BullMQ copies lockDuration and lockRenewTime into its LockManager when the worker is made
 * (https://github.com/taskforcesh/bullmq/pull/3543) and has no public way to change them afterwards; its protected
 * factory `createLockManager`, there for subclasses, makes the lock manager again from the new options.
 * bullmq-lock-manager.spec.ts fails if an upgrade renames it or stops reading the options.
 */
export function applyJobLockTimings(worker: Worker, lockMs: number): void {
  Object.assign(worker.opts, { lockDuration: lockMs, lockRenewTime: Math.floor(lockMs / 2), stalledInterval: lockMs });
  WorkerLockAccess.remakeLockManager(worker);
}

/**
 * Never made: a subclass only so that calling Worker's protected `createLockManager` is type-checked against
 * BullMQ's own declarations (a rename fails the build) rather than hidden behind a cast to `unknown`.
 */
abstract class WorkerLockAccess extends Worker {
  static remakeLockManager(worker: Worker): void {
    (worker as WorkerLockAccess).createLockManager();
  }
}
