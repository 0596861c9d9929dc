/** A free buffer no upload has taken for this long is let go, so that a burst's memory does not stay. */
export const PART_BUFFER_IDLE_MS = 60_000;

/**
 * The part buffers all uploads of this process share (STORAGE_MEMORY_BUDGET_BYTES). A buffer is
 * allocated once and reused for part after part; when the budget is spent, an upload waits for a
 * buffer to come back (first come, first served) rather than allocate — so memory is bounded by
 * configuration, not by how many uploads arrive, and no part leaves a fresh buffer behind as garbage.
 * Buffers left free for `idleMs` are dropped (V8 then hands their memory back to the system), so the
 * process returns to its resting size once a burst of uploads is over.
 */
export class PartBufferPool {
  private allocated = 0;
  private lent = 0;
  /** Free buffers by size; the most recently returned is last and is reused first, so the oldest age out. */
  private readonly free = new Map<number, { buffer: Buffer; freeSince: number }[]>();
  private readonly waiting: { size: number; count: number; grant: (buffers: Buffer[]) => void }[] = [];
  private sweep: NodeJS.Timeout | null = null;

  constructor(
    readonly budgetBytes: number,
    private readonly idleMs = PART_BUFFER_IDLE_MS,
  ) {}

  /** Bytes of buffers lent out now. */
  get inUseBytes(): number {
    return this.lent;
  }

  /** Bytes of buffers this pool holds, lent out or free. */
  get allocatedBytes(): number {
    return this.allocated;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  /** A buffer of exactly `size` bytes, once one is free or the budget allows one more. */
  async acquire(size: number): Promise<Buffer> {
    return (await this.acquireMany(size, 1))[0];
  }

  /**
   * `count` buffers of `size` bytes, granted together: a writer that needs two buffers to make progress
   * never holds one while waiting for the other, so writers cannot deadlock each other over the budget.
   */
  acquireMany(size: number, count: number): Promise<Buffer[]> {
    if (this.waiting.length === 0) {
      const buffers = this.takeMany(size, count);
      if (buffers) return Promise.resolve(buffers);
    }
    return new Promise((grant) => this.waiting.push({ size, count, grant }));
  }

  release(buffer: Buffer): void {
    this.lent -= buffer.length;
    const list = this.free.get(buffer.length) ?? [];
    list.push({ buffer, freeSince: Date.now() });
    this.free.set(buffer.length, list);
    while (this.waiting.length > 0) {
      const next = this.takeMany(this.waiting[0].size, this.waiting[0].count);
      if (!next) break;
      this.waiting.shift()!.grant(next);
    }
    this.scheduleSweep();
  }

  /** A timer for when the longest-free buffer reaches the idle time, while there is any free buffer. */
  private scheduleSweep(): void {
    if (this.sweep) return;
    let oldest = Infinity;
    for (const list of this.free.values()) if (list.length > 0) oldest = Math.min(oldest, list[0].freeSince);
    if (oldest === Infinity) return;
    this.sweep = setTimeout(
      () => {
        this.sweep = null;
        this.dropIdle();
        this.scheduleSweep();
      },
      Math.max(0, oldest + this.idleMs - Date.now()),
    );
    // A pool with free buffers must not keep the process alive.
    this.sweep.unref();
  }

  private dropIdle(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [size, list] of this.free) {
      const idle = list.findIndex((entry) => entry.freeSince > cutoff);
      const dropped = idle === -1 ? list.length : idle;
      list.splice(0, dropped);
      this.allocated -= dropped * size;
      if (list.length === 0) this.free.delete(size);
    }
  }

  /** `count` buffers at once, or none: reused ones first, fresh ones while the budget allows. */
  private takeMany(size: number, count: number): Buffer[] | null {
    const reusable = this.free.get(size) ?? [];
    const fresh = Math.max(0, count - reusable.length);
    if (fresh > 0) {
      // Make room by dropping free buffers of other sizes (a part size used once, say).
      for (const [other, list] of this.free) {
        while (other !== size && list.length > 0 && this.allocated + fresh * size > this.budgetBytes) {
          list.pop();
          this.allocated -= other;
        }
      }
      // Alone, a writer always gets its buffers, even when they are more than the budget.
      if (this.allocated + fresh * size > this.budgetBytes && this.lent > 0) return null;
    }
    const taken: Buffer[] = [];
    for (let i = 0; i < count; i++) {
      const buffer = reusable.pop()?.buffer;
      if (buffer) taken.push(buffer);
      else {
        this.allocated += size;
        taken.push(Buffer.allocUnsafeSlow(size));
      }
    }
    this.lent += count * size;
    return taken;
  }
}
