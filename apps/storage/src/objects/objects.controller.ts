import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, APP_CONFIG, LOGGER, watchResponseBody, type AppLogger, type StorageConfig } from '@app/common';
import {
  type ComposedObjectReceipt,
  type ComposeRequest,
  STORAGE_HEADER,
  STORAGE_KEY_PATTERN,
  type StoredObjectReceipt,
} from '@app/contracts';
import { ObjectsService } from './objects.service';

function checkedKey(key: string): string {
  if (!STORAGE_KEY_PATTERN.test(key) || key.includes('..')) throw ApiError.notFound('object');
  return key;
}

/** At most this many sources in one compose (S3's part limit), and this much JSON describing them. */
const MAX_COMPOSE_SOURCES = 10_000;
const MAX_COMPOSE_BODY_BYTES = 2 * 1024 * 1024;

async function readComposeRequest(req: Request): Promise<ComposeRequest> {
  let text = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    text += chunk.toString('utf8');
    if (text.length > MAX_COMPOSE_BODY_BYTES) throw ApiError.invalid('compose request too large');
  }
  let body: ComposeRequest;
  try {
    body = JSON.parse(text) as ComposeRequest;
  } catch {
    throw new ApiError('invalid_json', 'The compose request is not JSON.');
  }
  if (!Array.isArray(body?.sources) || body.sources.length > MAX_COMPOSE_SOURCES)
    throw ApiError.invalid('sources must be a list of keys', 'sources');
  return { sources: body.sources.map((source) => checkedKey(String(source))), contentType: body.contentType };
}

/** The internal compose API: an object made on the S3 side from others, in order. */
@Controller('internal/compose')
export class ComposeController {
  constructor(@Inject(ObjectsService) private readonly objects: ObjectsService) {}

  @Post(':key')
  @HttpCode(200)
  async compose(@Param('key') key: string, @Req() req: Request): Promise<ComposedObjectReceipt> {
    const request = await readComposeRequest(req);
    return this.objects.compose(checkedKey(key), request.sources, request.contentType);
  }
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
