import { Injectable } from '@nestjs/common';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { ZipFile } from 'yazl';
import type { ZipEntryOptions } from './zip-entry-options';

interface BufferCrc32 {
  unsigned(data: Buffer | string, previous?: number): number;
}

/**
 * yazl takes each entry's CRC-32 from buffer-crc32, a byte-at-a-time JavaScript loop and a large share of the
 * worker's CPU in a big archive build (a CPU profile of `npm run bench:archive` shows it). zlib's CRC-32
 * (native, Node ≥ 20.15) gives the same values for a small fraction of that. yazl offers no hook for it, so the
 * one function it calls on the module instance it loaded is pointed at zlib's, once, when this module loads (on a
 * Node without `zlib.crc32`, below our engines range, yazl keeps its own).
 */
export const yazlCrc32 = createRequire(require.resolve('yazl'))('buffer-crc32') as BufferCrc32;
if (typeof zlibCrc32 === 'function') yazlCrc32.unsigned = (data, previous) => zlibCrc32(data, previous ?? 0);

/** Progress callbacks: bytes of sources as the writer consumes them, and each entry whose source ended. */
export interface ZipProgress {
  onBytes(count: number): void;
  onEntryDone(): void;
}

export interface ZipEntrySource {
  name: string;
  options: ZipEntryOptions;
  /** Called when the writer reaches the entry before this one (look-ahead of one). */
  open(): Promise<Readable>;
}

/**
 * One ZIP being written as a stream (yazl: ZIP64 where a size, offset or count needs it, the UTF-8
 * flag on every name). Entries are written in the order added. Each source is opened when the writer
 * reaches the entry before it, so the request for the next object is in flight while the current one
 * streams (small files cost a round trip each otherwise); at most two sources are open at once, and
 * the waiting one is paused, so memory stays at a few socket buffers. `output` honours back-pressure.
 * Any failure destroys `output` with the error.
 */
export class ZipStream {
  private readonly zip = new ZipFile();
  private readonly entries: ZipEntrySource[] = [];
  private readonly opened = new Map<number, Promise<Readable>>();
  private readonly open = new Set<Readable>();
  private failed = false;
  readonly output: Readable;

  constructor(private readonly progress?: ZipProgress) {
    this.output = this.zip.outputStream as Readable;
    this.zip.on('error', (error: Error) => this.fail(error));
  }

  add(entry: ZipEntrySource): void {
    const index = this.entries.push(entry) - 1;
    this.zip.addReadStreamLazy(entry.name, entry.options, (done) => {
      const source = this.opened.get(index) ?? this.openSource(index);
      this.opened.delete(index);
      if (index + 1 < this.entries.length) this.opened.set(index + 1, this.openSource(index + 1));
      source.then(
        (stream) => {
          done(null, stream);
          // Counted only once yazl has piped it: a 'data' listener on a paused look-ahead would start it flowing into
          // nowhere.
          if (this.progress) {
            const progress = this.progress;
            stream.on('data', (chunk: Buffer) => progress.onBytes(chunk.length));
            stream.once('end', () => progress.onEntryDone());
          }
        },
        (error: unknown) => done(error, undefined as never),
      );
    });
  }

  private openSource(index: number): Promise<Readable> {
    const promise = this.entries[index]!.open().then((stream) => {
      this.open.add(stream);
      // yazl pipes the source but does not listen for its errors: a cut connection must fail the ZIP.
      stream.once('error', (error) => this.fail(error));
      stream.once('close', () => this.open.delete(stream));
      if (this.failed) stream.destroy();
      return stream;
    });
    // A look-ahead that fails is reported when its turn comes (or not at all, if the ZIP failed first).
    promise.catch(() => undefined);
    return promise;
  }

  end(): void {
    this.zip.end();
  }

  fail(error: unknown): void {
    this.failed = true;
    for (const stream of this.open) stream.destroy();
    if (!this.output.destroyed) this.output.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}

/** The one place that writes ZIPs. */
@Injectable()
export class ZipWriter {
  open(progress?: ZipProgress): ZipStream {
    return new ZipStream(progress);
  }
}
