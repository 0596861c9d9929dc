import { describe, expect, it } from 'vitest';
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
});
