import { open, stat } from 'node:fs/promises';
import { ConversionError } from './conversion.error';

const tooLarge = (bytes: number, maxBytes: number, what: string) =>
  new ConversionError('too_large', `${bytes} bytes is over the ${maxBytes}-byte limit for ${what}`);

/** Refuses a file over the limit by its size on disk (for converters that hand the file to another process). */
export async function assertInputSize(path: string, maxBytes: number, what: string): Promise<void> {
  const { size } = await stat(path);
  if (size > maxBytes) throw tooLarge(size, maxBytes, what);
}

/**
 * Reads a whole file into memory, but never more than `maxBytes`: the limit holds on what is read, not on what a
 * stat said a moment earlier.
 */
export async function readCapped(path: string, maxBytes: number, what: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    if (size > maxBytes) throw tooLarge(size, maxBytes, what);
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(Math.max(size - length, 0) + 1, maxBytes - length + 1, 16 * 1024 * 1024));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, length);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      if (length > maxBytes) throw tooLarge(length, maxBytes, what);
    }
    // Its own memory, not a slice of Node's shared pool: pdf-lib reads the underlying ArrayBuffer from offset 0.
    const whole = Buffer.alloc(length);
    let offset = 0;
    for (const chunk of chunks) offset += chunk.copy(whole, offset);
    return whole;
  } finally {
    await handle.close();
  }
}
