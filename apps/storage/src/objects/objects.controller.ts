import { Controller, Delete, Get, HttpCode, Inject, Param, Put, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, APP_CONFIG, LOGGER, watchResponseBody, type AppLogger, type StorageConfig } from '@app/common';
import { STORAGE_HEADER, STORAGE_KEY_PATTERN, type StoredObjectReceipt } from '@app/contracts';
import { ObjectsService } from './objects.service';

function checkedKey(key: string): string {
  if (!STORAGE_KEY_PATTERN.test(key) || key.includes('..')) throw ApiError.notFound('object');
  return key;
}

/** The internal object API: PUT streams in, GET streams out (with Range), DELETE removes. */
@Controller('internal/objects')
export class ObjectsController {
  constructor(
    @Inject(ObjectsService) private readonly objects: ObjectsService,
    @Inject(APP_CONFIG) private readonly config: StorageConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  @Put(':key')
  async put(@Param('key') key: string, @Req() req: Request): Promise<StoredObjectReceipt> {
    const maxBytes = Number(req.headers[STORAGE_HEADER.maxBytes]);
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
      throw ApiError.invalid(`${STORAGE_HEADER.maxBytes} must be a byte count`);
    const contentType = req.headers[STORAGE_HEADER.contentType];
    return this.objects.put(checkedKey(key), req, maxBytes, typeof contentType === 'string' ? contentType : undefined);
  }

  @Get(':key')
  async get(@Param('key') key: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const range = typeof req.headers.range === 'string' ? req.headers.range : undefined;
    const object = await this.objects.read(checkedKey(key), range);
    res.status(object.contentRange ? 206 : 200);
    res.setHeader('content-type', 'application/octet-stream');
    res.setHeader('content-length', object.contentLength);
    if (object.contentRange) res.setHeader('content-range', object.contentRange);
    watchResponseBody(res, { idleMs: this.config.UHP_IDLE_TIMEOUT_MS, logger: this.logger });
    try {
      await pipeline(object.body, res);
    } catch {
      // The reader went away or stalled past the idle limit: nothing more to send.
      object.body.destroy();
      res.destroy();
    }
  }

  @Delete(':key')
  @HttpCode(204)
  async delete(@Param('key') key: string): Promise<void> {
    await this.objects.delete(checkedKey(key));
  }
}
