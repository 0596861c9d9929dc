import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { describe, expect, it } from 'vitest';
import { gatewayConfig } from '../../../../test/fakes/gateway';
import { silentLogger } from '../../../../test/fakes/platform';
import { ResponseWriter } from './response-writer';

/** A response whose client reads `accept` writes and then goes away. */
function clientThatLeaves(accept: number) {
  const res = Object.assign(new EventEmitter(), {
    destroyed: false,
    written: [] as string[],
    status: () => res,
    setHeader: () => res,
    setTimeout: () => res,
    write(text: string) {
      res.written.push(text);
      if (res.written.length >= accept && !res.destroyed) {
        res.destroyed = true;
        setImmediate(() => res.emit('close'));
        return false;
      }
      return true;
    },
    end: (text: string) => res.written.push(text),
    destroy: () => (res.destroyed = true),
  });
  return res;
}

/** Batches served from an array of arrays, counting how many were pulled. */
function batchesOf<T>(batches: T[][]) {
  let pulled = 0;
  return {
    get pulled() {
      return pulled;
    },
    next: async () => (pulled < batches.length ? batches[pulled++] : null),
  };
}

describe('ResponseWriter.jsonStream', () => {
  it('stops pulling batches as soon as the client goes away', async () => {
    const padding = 'x'.repeat(70 * 1024);
    const source = batchesOf(Array.from({ length: 1000 }, (_, i) => [{ i, padding }]));
    const res = clientThatLeaves(3);
    await new ResponseWriter(silentLogger, gatewayConfig()).jsonStream(res as unknown as Response, {
      head: '[',
      batches: source,
      present: (item) => item,
      tail: ']',
    });
    expect(source.pulled).toBeLessThan(5);
    expect(res.written.at(-1)).not.toBe(']');
  });

  it('joins the presented items of every batch into one JSON document, empty batches included', async () => {
    const res = clientThatLeaves(Infinity);
    await new ResponseWriter(silentLogger, gatewayConfig()).jsonStream(res as unknown as Response, {
      head: '{"list":[',
      batches: batchesOf([[], [1, 2], [], [3], [4, 5, 6]]),
      present: (n: number) => ({ n, name: `"item" ${n}` }),
      tail: ']}',
    });
    expect(JSON.parse(res.written.join(''))).toEqual({
      list: [1, 2, 3, 4, 5, 6].map((n) => ({ n, name: `"item" ${n}` })),
    });
  });
});
