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

describe('ResponseWriter.jsonStream', () => {
  it('stops pulling items, and closes their source, as soon as the client goes away', async () => {
    let pulled = 0;
    let closed = false;
    async function* items() {
      try {
        // Each item fills a write of its own (items are gathered into 64 KiB writes).
        const padding = 'x'.repeat(70 * 1024);
        for (let i = 0; i < 100_000; i++) {
          pulled++;
          yield { i, padding };
        }
      } finally {
        closed = true;
      }
    }
    const res = clientThatLeaves(3);
    await new ResponseWriter(silentLogger, gatewayConfig()).jsonStream(res as unknown as Response, {
      head: '[',
      items: items(),
      tail: ']',
    });
    expect(closed).toBe(true);
    expect(pulled).toBeLessThan(5);
  });
});
