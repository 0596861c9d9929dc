import { Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ZipFile } from 'yazl';
import type { ZipEntryOptions } from './zip-entry-options';

export interface ZipEntrySource {
  name: string;
  options: ZipEntryOptions;
  /** Called when the writer reaches this entry, so one source is open at a time. */
  open(): Promise<Readable>;
}

/**
 * One ZIP being written as a stream (yazl: ZIP64 where a size, offset or count needs it, the UTF-8
 * flag on every name). Entries are written in the order added, each source opened only when its turn
 * comes; `output` honours back-pressure. Any failure destroys `output` with the error.
 */
export class ZipStream {
  private readonly zip = new ZipFile();
  private current: Readable | undefined;
  readonly output: Readable;

  constructor() {
    this.output = this.zip.outputStream as Readable;
    this.zip.on('error', (error: Error) => this.fail(error));
  }

  add(entry: ZipEntrySource): void {
    this.zip.addReadStreamLazy(entry.name, entry.options, (done) => {
      entry.open().then(
        (source) => {
          this.current = source;
          // yazl pipes the source but does not listen for its errors: a cut connection must fail the ZIP.
          source.once('error', (error) => this.fail(error));
          done(null, source);
        },
        (error: unknown) => done(error, undefined as never),
      );
    });
  }

  end(): void {
    this.zip.end();
  }

  fail(error: unknown): void {
    this.current?.destroy();
    if (!this.output.destroyed) this.output.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}

/** The one place that writes ZIPs. */
@Injectable()
export class ZipWriter {
  open(): ZipStream {
    return new ZipStream();
  }
}
