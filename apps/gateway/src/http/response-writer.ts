import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, APP_CONFIG, LOGGER, watchResponseBody, type AppLogger, type GatewayConfig } from '@app/common';
import type { Download } from '../downloads/downloads';
import { dispositionHeader } from './content-disposition';

/** Artifacts are attacker-influenced: never sniffed, never run, never cached by shared caches. */
const SAFETY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cache-control': 'private',
  'accept-ranges': 'bytes',
} as const;

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** Resolves when the response can take more, or when the client has gone (then nothing more is read). */
function drainedOrClosed(res: Response): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** The parts of a JSON document streamed batch by batch: `head`, the presented items joined by commas, `tail`. */
export interface JsonStream<T> {
  head: string;
  /** Pulled one batch at a time (null at the end), so the writer holds at most one batch of items. */
  batches: { next(): Promise<readonly T[] | null> };
  present: (item: T) => unknown;
  tail: string;
}

/** A batch as the middle of a JSON array (led by a comma unless it is the first); null at the end. */
function joinPresented<T>(batch: readonly T[] | null, present: (item: T) => unknown, first: boolean): string | null {
  if (!batch) return null;
  let text = '';
  for (let i = 0; i < batch.length; i++) text += (first && i === 0 ? '' : ',') + JSON.stringify(present(batch[i]));
  return text;
}

/** Writes what services return onto the response: downloads with every header of the contract, and streamed JSON. */
@Injectable()
export class ResponseWriter {
  constructor(
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** A body that stops moving (a client that stopped reading) is cut after the idle limit. */
  private watch(res: Response): void {
    watchResponseBody(res, { idleMs: this.config.UHP_IDLE_TIMEOUT_MS, logger: this.logger });
  }

  /**
   * Content-Disposition, nosniff, the CSP sandbox, a strong ETag with 304, and one byte range (206/416;
   * several ranges or a malformed header get the whole file). The bytes stream with back-pressure.
   */
  async download(req: Request, res: Response, download: Download): Promise<void> {
    const size = download.bytes;
    const etag = `"${download.etag}"`;
    for (const [name, value] of Object.entries(SAFETY_HEADERS)) res.setHeader(name, value);
    if (etagMatches(req.headers['if-none-match'], etag)) {
      res.setHeader('etag', etag);
      res.status(304).end();
      return;
    }
    let range: { start: number; end: number } | undefined;
    const ifRange = req.headers['if-range'];
    if (req.headers.range && (!ifRange || ifRange === etag)) {
      const parsed = req.range(size, { combine: true });
      if (parsed === -1)
        throw new ApiError('range_not_satisfiable', `The range is outside the file's ${size} bytes.`, null, {
          'content-range': `bytes */${size}`,
        });
      if (Array.isArray(parsed) && parsed.type === 'bytes' && parsed.length === 1) range = parsed[0];
    }
    const disposition = dispositionHeader(download.disposition, download.filename);
    // Opened before the download's own headers are set: a source that cannot be opened is answered as an
    // error without the file's ETag, name or range on it.
    const body = req.method === 'HEAD' || size === 0 ? null : await download.open(range);
    res.setHeader('etag', etag);
    res.setHeader('content-type', download.contentType);
    res.setHeader('content-disposition', disposition);
    if (range) {
      res.status(206);
      res.setHeader('content-range', `bytes ${range.start}-${range.end}/${size}`);
      res.setHeader('content-length', range.end - range.start + 1);
    } else {
      res.status(200);
      res.setHeader('content-length', size);
    }
    if (!body) {
      res.end();
      return;
    }
    this.watch(res);
    try {
      await pipeline(body, res);
    } catch (error) {
      if (!res.writableEnded && !req.destroyed) this.logger.warn({ err: error }, 'download stream failed');
      body.destroy();
      res.destroy();
    }
  }

  /**
   * Streams a JSON document whose middle is a long list, batch by batch with back-pressure, so memory does
   * not grow with the list. A failure once the status is out cuts the body, so the client sees an
   * incomplete document rather than a short list.
   */
  async jsonStream<T>(res: Response, stream: JsonStream<T>): Promise<void> {
    res.status(200);
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    this.watch(res);
    const write = async (text: string) => {
      if (!res.write(text)) await drainedOrClosed(res);
    };
    try {
      await write(stream.head);
      let first = true;
      for (;;) {
        if (res.destroyed) return;
        // The batch becomes one string here and is not held while the write waits, so its items die young.
        const text = joinPresented(await stream.batches.next(), stream.present, first);
        if (text === null) break;
        if (!text) continue;
        first = false;
        if (res.destroyed) return;
        await write(text);
      }
      res.end(stream.tail);
    } catch (error) {
      this.logger.error({ err: error }, 'streamed JSON failed mid-stream');
      res.destroy();
    }
  }
}
