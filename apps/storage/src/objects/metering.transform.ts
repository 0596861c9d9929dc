import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

export class ObjectTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`object exceeds ${maxBytes} bytes`);
    this.name = 'ObjectTooLargeError';
  }
}

/** Passes bytes through while counting and hashing them; fails the stream one byte past the cap. */
export class MeteringTransform extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) return callback(new ObjectTooLargeError(this.maxBytes));
    this.hash.update(chunk);
    callback(null, chunk);
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
