import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, LOGGER, StorageClient, type AppLogger } from '@app/common';
import { dispositionHeader } from './content-disposition';

export interface Downloadable {
  storageKey: string;
  sha256: string;
  bytes: bigint | number;
  contentType: string;
  filename: string;
}

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

/**
 * Serves an object's bytes with every header of PROFILE §5: Content-Disposition, nosniff, CSP sandbox,
 * a strong ETag with 304, and single byte ranges (206/416). The bytes stream from the storage service.
 */
@Injectable()
export class DownloadService {
  constructor(
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async send(req: Request, res: Response, file: Downloadable, disposition: 'attachment' | 'inline' = 'attachment'): Promise<void> {
    const size = Number(file.bytes);
    const etag = `"${file.sha256}"`;
    res.setHeader('etag', etag);
    for (const [name, value] of Object.entries(SAFETY_HEADERS)) res.setHeader(name, value);

    if (etagMatches(req.headers['if-none-match'], etag)) {
      res.status(304).end();
      return;
    }

    let range: { start: number; end: number } | undefined;
    const ifRange = req.headers['if-range'];
    if (req.headers.range && (!ifRange || ifRange === etag)) {
      const parsed = req.range(size, { combine: true });
      if (parsed === -1) {
        throw new ApiError('range_not_satisfiable', `The range is outside the file's ${size} bytes.`, null, { 'content-range': `bytes */${size}` });
      }
      // A malformed or multi-range header is ignored: the whole file is served.
      if (Array.isArray(parsed) && parsed.type === 'bytes' && parsed.length === 1) range = parsed[0];
    }

    res.setHeader('content-type', file.contentType);
    res.setHeader('content-disposition', dispositionHeader(disposition, file.filename));
    if (range) {
      res.status(206);
      res.setHeader('content-range', `bytes ${range.start}-${range.end}/${size}`);
      res.setHeader('content-length', range.end - range.start + 1);
    } else {
      res.status(200);
      res.setHeader('content-length', size);
    }
    if (req.method === 'HEAD' || size === 0) {
      res.end();
      return;
    }
    const object = await this.storage.getObject(file.storageKey, range);
    try {
      await pipeline(object.body, res);
    } catch (error) {
      if (!res.writableEnded && !req.destroyed) this.logger.warn({ err: error }, 'download stream failed');
      object.body.destroy();
      res.destroy();
    }
  }
}
