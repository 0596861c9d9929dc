import { describe, expect, it } from 'vitest';
import { PartArrivalOrder } from './part-arrival';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('PartArrivalOrder', () => {
  it('runs takes in arrival order, however late the first one gets to its turn', async () => {
    const order = new PartArrivalOrder();
    const first = order.join('upload_a');
    const second = order.join('upload_a');
    const other = order.join('upload_b');
    const taken: string[] = [];
    const secondDone = order.inTurn(second, async () => void taken.push('second'));
    const otherDone = order.inTurn(other, async () => void taken.push('other'));
    await tick();
    // Another upload's line does not wait; this one's second part waits for its first.
    expect(taken).toEqual(['other']);
    await order.inTurn(first, async () => void taken.push('first'));
    await Promise.all([secondDone, otherDone]);
    expect(taken).toEqual(['other', 'first', 'second']);
  });

  it('lets the line go on when an earlier request ends without taking (its response closed)', async () => {
    const order = new PartArrivalOrder();
    const refused = order.join('upload_a');
    const next = order.join('upload_a');
    const done = order.inTurn(next, async () => 'taken');
    refused.leave();
    expect(await done).toBe('taken');
  });

  it('a failed take lets the next one go too', async () => {
    const order = new PartArrivalOrder();
    const first = order.join('upload_a');
    const second = order.join('upload_a');
    await expect(order.inTurn(first, async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await order.inTurn(second, async () => 2)).toBe(2);
  });
});
