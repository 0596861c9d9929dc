import { Controller, Delete, Get, HttpCode, Inject, Param, Put, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiError } from '@app/common';
import { STORAGE_HEADER, STORAGE_KEY_PATTERN, type StoredObjectReceipt } from '@app/contracts';
import { ObjectsService } from './objects.service';

function checkedKey(key: string): string {
  if (!STORAGE_KEY_PATTERN.test(key) || key.includes('..')) throw ApiError.notFound('object');
  return key;
}

/** The internal object API: PUT streams in, GET streams out (with Range), DELETE removes. */
@Controller('internal/objects')
export class ObjectsController {
  constructor(@Inject(ObjectsService) private readonly objects: ObjectsService) {}

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
    await this.objects.read(checkedKey(key), range, (length, contentRange) => {
      res.status(contentRange ? 206 : 200);
      res.setHeader('content-type', 'application/octet-stream');
      res.setHeader('content-length', length);
      if (contentRange) res.setHeader('content-range', contentRange);
      return res;
    });
  }

  @Delete(':key')
  @HttpCode(204)
  async delete(@Param('key') key: string): Promise<void> {
    await this.objects.delete(checkedKey(key));
  }
}
