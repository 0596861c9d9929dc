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

describe('ResponseWriter.download', () => {
  it('sets none of the file’s own headers when its bytes cannot be opened: the error goes out clean', async () => {
    const headers = new Map<string, unknown>();
    let status: number | undefined;
    const res = {
      setHeader: (name: string, value: unknown) => headers.set(name.toLowerCase(), value),
      status: (code: number) => {
        status = code;
        return res;
      },
    };
    const req = {
      method: 'GET',
      headers: { range: 'bytes=0-4' },
      range: () => Object.assign([{ start: 0, end: 4 }], { type: 'bytes' }),
    };
    const gone = new Error('gone from the bucket');
    const download = {
      filename: 'report.pdf',
      contentType: 'application/pdf',
      bytes: 10,
      etag: 'abc',
      disposition: 'inline' as const,
      open: () => Promise.reject(gone),
    };
    await expect(
      new ResponseWriter(silentLogger, gatewayConfig()).download(req as never, res as unknown as Response, download),
    ).rejects.toBe(gone);
    expect(
      [...headers.keys()].filter((name) =>
        ['etag', 'content-disposition', 'content-range', 'content-length', 'content-type'].includes(name),
      ),
    ).toEqual([]);
    expect(status).toBeUndefined();
  });
});
