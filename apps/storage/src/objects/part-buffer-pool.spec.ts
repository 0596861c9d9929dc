import { afterEach, describe, expect, it, vi } from 'vitest';
import { PartBufferPool } from './part-buffer-pool';

const KiB = 1024;

describe('PartBufferPool', () => {
  it('reuses buffers, and makes uploads wait in arrival order once the budget is lent out', async () => {
    const pool = new PartBufferPool(2 * KiB);
    const first = await pool.acquire(KiB);
    const second = await pool.acquire(KiB);
    const granted: string[] = [];
    const third = pool.acquire(KiB).then((buffer) => (granted.push('third'), buffer));
    const fourth = pool.acquire(KiB).then((buffer) => (granted.push('fourth'), buffer));
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted).toEqual([]);
    expect(pool.waitingCount).toBe(2);
    pool.release(first);
    expect(await third).toBe(first);
    pool.release(second);
    expect(await fourth).toBe(second);
    expect(granted).toEqual(['third', 'fourth']);
    expect(pool.inUseBytes).toBe(2 * KiB);
  });

  it('gives a part larger than the whole budget to an upload that is alone', async () => {
    const pool = new PartBufferPool(KiB);
    expect((await pool.acquire(4 * KiB)).length).toBe(4 * KiB);
  });

  it('drops free buffers of another size to make room for the size asked', async () => {
    const pool = new PartBufferPool(2 * KiB);
    const small = await pool.acquire(KiB);
    pool.release(small);
    const big = await pool.acquire(2 * KiB);
    expect(big.length).toBe(2 * KiB);
    expect(pool.inUseBytes).toBe(2 * KiB);
  });

  it('grants a pair together or not at all, so two writers never each hold half of what they need', async () => {
    const pool = new PartBufferPool(2 * KiB);
    const [a, b] = await pool.acquireMany(KiB, 2);
    let granted: Buffer[] | null = null;
    const pair = pool.acquireMany(KiB, 2).then((buffers) => (granted = buffers));
    pool.release(a);
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted).toBeNull();
    pool.release(b);
    expect((await pair).length).toBe(2);
    expect(pool.inUseBytes).toBe(2 * KiB);
  });

  describe('after a burst', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('lets go of buffers left free for the idle time, the least recently used first, never a lent one', async () => {
      vi.useFakeTimers();
      const pool = new PartBufferPool(8 * KiB, 60_000);
      const burst = await pool.acquireMany(KiB, 4);
      expect(pool.allocatedBytes).toBe(4 * KiB);
      for (const buffer of burst.slice(0, 3)) pool.release(buffer);

      // One upload goes on: it keeps taking and returning the same buffer, which stays fresh.
      const kept = burst[3];
      for (let second = 0; second < 100; second++) {
        await vi.advanceTimersByTimeAsync(1_000);
        if (second === 50) pool.release(await pool.acquire(KiB));
      }
      // The three buffers of the burst went; the one reused 50 s ago and the lent one did not.
      expect(pool.allocatedBytes).toBe(2 * KiB);
      expect(pool.inUseBytes).toBe(KiB);

      pool.release(kept);
      await vi.advanceTimersByTimeAsync(90_000);
      expect(pool.allocatedBytes).toBe(0);
      expect(vi.getTimerCount()).toBe(0);

      // A new upload gets a new buffer, not one of those let go.
      const fresh = await pool.acquire(KiB);
      expect(burst).not.toContain(fresh);
      expect(pool.allocatedBytes).toBe(KiB);
    });

    it('lets a buffer go when it has been free for the idle time, not a sweep period later', async () => {
      vi.useFakeTimers();
      const pool = new PartBufferPool(4 * KiB, 60_000);
      const [first, second] = await pool.acquireMany(KiB, 2);
      pool.release(first);
      await vi.advanceTimersByTimeAsync(20_000);
      pool.release(second);
      await vi.advanceTimersByTimeAsync(39_900);
      expect(pool.allocatedBytes).toBe(2 * KiB);
      await vi.advanceTimersByTimeAsync(200);
      expect(pool.allocatedBytes).toBe(KiB);
      await vi.advanceTimersByTimeAsync(19_900);
      expect(pool.allocatedBytes).toBe(0);
    });

    it('counts a dropped buffer out of the budget, so waiting uploads are not held back by memory it no longer has', async () => {
      vi.useFakeTimers();
      const pool = new PartBufferPool(2 * KiB, 60_000);
      const [a, b] = await pool.acquireMany(KiB, 2);
      pool.release(a);
      await vi.advanceTimersByTimeAsync(120_000);
      expect(pool.allocatedBytes).toBe(KiB);
      // The budget has room for one more again, although b is still out.
      const [c] = await pool.acquireMany(KiB, 1);
      expect(c).not.toBe(a);
      expect(pool.inUseBytes).toBe(2 * KiB);
      pool.release(b);
      pool.release(c);
    });
  });
});
