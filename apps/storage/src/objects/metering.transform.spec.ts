import { createHash, randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { MeteringTransform, ObjectTooLargeError } from './metering.transform';

const sink = () => new Writable({ write: (_chunk, _encoding, done) => done() });

describe('MeteringTransform', () => {
  it('counts and hashes every byte that passes', async () => {
    const data = randomBytes(100_000);
    const meter = new MeteringTransform(100_000);
    await pipeline(Readable.from([data.subarray(0, 10), data.subarray(10)]), meter, sink());
    expect(meter.bytes).toBe(100_000);
    expect(meter.digest()).toBe(createHash('sha256').update(data).digest('hex'));
  });

  it('fails one byte past the cap', async () => {
    const meter = new MeteringTransform(10);
    await expect(pipeline(Readable.from([Buffer.alloc(6), Buffer.alloc(5)]), meter, sink())).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    );
  });

  it('accepts an empty object', async () => {
    const meter = new MeteringTransform(0);
    await pipeline(Readable.from([]), meter, sink());
    expect(meter.bytes).toBe(0);
    expect(meter.digest()).toBe(createHash('sha256').digest('hex'));
  });
});
