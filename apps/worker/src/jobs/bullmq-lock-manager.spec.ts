import { LockManager, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { applyJobLockTimings } from './bullmq-lock-manager';

/** A Worker whose constructor never ran (no Redis), with the options a built one holds. */
function builtWorker(): Worker {
  const worker = Object.create(Worker.prototype) as Worker;
  Object.assign(worker, {
    id: 'worker-1',
    opts: { name: 'archive', lockDuration: 30_000, lockRenewTime: 15_000, stalledInterval: 30_000 },
  });
  return worker;
}

/** The LockManager a worker holds and the options it copied: BullMQ keeps both protected. */
function lockManagerOf(worker: Worker): { manager: unknown; opts: unknown } {
  const manager = (worker as unknown as { lockManager?: LockManager }).lockManager;
  return { manager, opts: (manager as unknown as { opts?: unknown } | undefined)?.opts };
}

describe('applyJobLockTimings (BullMQ internals this worker relies on)', () => {
  it("BullMQ's Worker still has the protected createLockManager this adapter calls", () => {
    const factory: unknown = Reflect.get(Worker.prototype, 'createLockManager');
    expect(typeof factory, 'bullmq renamed or removed Worker#createLockManager: see bullmq-lock-manager.ts').toBe(
      'function',
    );
  });

  it('sets the claim, its renewal and the stalled check, and the lock manager is made again from them', () => {
    const worker = builtWorker();
    applyJobLockTimings(worker, 8_000);
    expect(worker.opts).toMatchObject({ lockDuration: 8_000, lockRenewTime: 4_000, stalledInterval: 8_000 });
    const { manager, opts } = lockManagerOf(worker);
    expect(manager, 'bullmq no longer keeps a LockManager in Worker#lockManager').toBeInstanceOf(LockManager);
    expect(opts, 'bullmq no longer copies the lock timings into its LockManager').toMatchObject({
      lockDuration: 8_000,
      lockRenewTime: 4_000,
      workerId: 'worker-1',
    });
  });
});
