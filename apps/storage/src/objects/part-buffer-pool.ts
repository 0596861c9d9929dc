/**
 * The part buffers all uploads of this process share (STORAGE_MEMORY_BUDGET_BYTES). A buffer is
 * allocated once and reused for part after part; when the budget is spent, an upload waits for a
 * buffer to come back (first come, first served) rather than allocate — so memory is bounded by
 * configuration, not by how many uploads arrive, and no part leaves a fresh buffer behind as garbage.
 */
export class PartBufferPool {
  private allocated = 0;
  private lent = 0;
  private readonly free = new Map<number, Buffer[]>();
  private readonly waiting: { size: number; count: number; grant: (buffers: Buffer[]) => void }[] = [];

  constructor(readonly budgetBytes: number) {}

  /** Bytes of buffers lent out now. */
  get inUseBytes(): number {
    return this.lent;
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
    list.push(buffer);
    this.free.set(buffer.length, list);
    while (this.waiting.length > 0) {
      const next = this.takeMany(this.waiting[0].size, this.waiting[0].count);
      if (!next) break;
      this.waiting.shift()!.grant(next);
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
      const buffer = reusable.pop();
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
