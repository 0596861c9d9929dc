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
  private readonly waiting: { size: number; grant: (buffer: Buffer) => void }[] = [];

  constructor(readonly budgetBytes: number) {}

  /** Bytes of buffers lent out now. */
  get inUseBytes(): number {
    return this.lent;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  /** A buffer of exactly `size` bytes, once one is free or the budget allows one more. */
  acquire(size: number): Promise<Buffer> {
    if (this.waiting.length === 0) {
      const buffer = this.take(size);
      if (buffer) return Promise.resolve(buffer);
    }
    return new Promise((grant) => this.waiting.push({ size, grant }));
  }

  release(buffer: Buffer): void {
    this.lent -= buffer.length;
    const list = this.free.get(buffer.length) ?? [];
    list.push(buffer);
    this.free.set(buffer.length, list);
    while (this.waiting.length > 0) {
      const next = this.take(this.waiting[0].size);
      if (!next) break;
      this.waiting.shift()!.grant(next);
    }
  }

  private take(size: number): Buffer | null {
    const reused = this.free.get(size)?.pop();
    if (reused) {
      this.lent += size;
      return reused;
    }
    // Make room by dropping free buffers of other sizes (a part size used once, say).
    for (const [other, list] of this.free) {
      while (other !== size && list.length > 0 && this.allocated + size > this.budgetBytes) {
        list.pop();
        this.allocated -= other;
      }
    }
    // Alone, an upload always gets its buffer, even when one part is larger than the budget.
    if (this.allocated + size > this.budgetBytes && this.lent > 0) return null;
    this.allocated += size;
    this.lent += size;
    return Buffer.allocUnsafeSlow(size);
  }
}
