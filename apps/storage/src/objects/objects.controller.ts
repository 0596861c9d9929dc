import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, APP_CONFIG, LOGGER, watchResponseBody, type AppLogger, type StorageConfig } from '@app/common';
import {
  type CompleteBlocksRequest,
  type CompletedBlocksReceipt,
  type ComposedObjectReceipt,
  type ComposeRequest,
  type ComposeSource,
  type HashedObjectReceipt,
  type ObjectReadUrl,
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

async function readJson<T>(req: Request): Promise<T> {
  let text = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    text += chunk.toString('utf8');
    if (text.length > MAX_COMPOSE_BODY_BYTES) throw ApiError.invalid('request too large');
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError('invalid_json', 'The request is not JSON.');
  }
}

const isOffset = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

function checkedSource(source: unknown): ComposeSource {
  if (typeof source === 'string') return checkedKey(source);
  const range = source as { key?: unknown; start?: unknown; end?: unknown } | null;
  if (
    !range ||
    typeof range.key !== 'string' ||
    !isOffset(range.start) ||
    !isOffset(range.end) ||
    range.end < range.start
  )
    throw ApiError.invalid('a source is a key or {key, start, end}', 'sources');
  return { key: checkedKey(range.key), start: range.start, end: range.end };
}

async function readComposeRequest(req: Request): Promise<ComposeRequest> {
  const body = await readJson<ComposeRequest>(req);
  if (!Array.isArray(body?.sources) || body.sources.length > MAX_COMPOSE_SOURCES)
    throw ApiError.invalid('sources must be a list of keys', 'sources');
  return { sources: body.sources.map(checkedSource), contentType: body.contentType };
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

/** Measures an object (size, SHA-256, MD5) by reading it once: a file completed from blocks is hashed here. */
@Controller('internal/hash')
export class HashController {
  constructor(@Inject(ObjectsService) private readonly objects: ObjectsService) {}

  @Post(':key')
  @HttpCode(200)
  async hash(@Param('key') key: string, @Req() req: Request): Promise<HashedObjectReceipt> {
    const body = await readJson<{ md5?: unknown }>(req);
    return this.objects.hash(checkedKey(key), body?.md5 !== false);
  }
}

/** Short-lived URLs that read an object straight from S3, so a download's bytes skip this service. */
@Controller('internal/read-urls')
export class ReadUrlsController {
  constructor(@Inject(ObjectsService) private readonly objects: ObjectsService) {}

  @Get(':key')
  readUrl(@Param('key') key: string): Promise<ObjectReadUrl> {
    return this.objects.readUrl(checkedKey(key));
  }
}

/** Multipart uploads kept open across requests: a resumable upload's parts go straight into them as blocks. */
@Controller('internal/multipart')
export class MultipartController {
  constructor(@Inject(ObjectsService) private readonly objects: ObjectsService) {}

  @Post(':key')
  @HttpCode(200)
  async open(@Param('key') key: string, @Req() req: Request): Promise<{ uploadId: string }> {
    const contentType = req.headers[STORAGE_HEADER.contentType];
    const uploadId = await this.objects.openMultipart(
      checkedKey(key),
      typeof contentType === 'string' ? contentType : undefined,
    );
    return { uploadId };
  }

  @Put(':key/:uploadId/blocks/:block')
  async writeBlock(
    @Param('key') key: string,
    @Param('uploadId') uploadId: string,
    @Param('block') block: string,
    @Req() req: Request,
  ): Promise<StoredObjectReceipt> {
    const maxBytes = Number(req.headers[STORAGE_HEADER.maxBytes]);
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
      throw ApiError.invalid(`${STORAGE_HEADER.maxBytes} must be a byte count`);
    return this.objects.writeBlock(checkedKey(key), uploadId, Number(block), req, maxBytes);
  }

  @Post(':key/:uploadId/complete')
  @HttpCode(200)
  async complete(
    @Param('key') key: string,
    @Param('uploadId') uploadId: string,
    @Req() req: Request,
  ): Promise<CompletedBlocksReceipt> {
    const body = await readJson<CompleteBlocksRequest>(req);
    const blocks = body?.blocks === 'all' ? 'all' : Array.isArray(body?.blocks) ? body.blocks : null;
    if (!blocks || (blocks !== 'all' && (blocks.length > MAX_COMPOSE_SOURCES || !blocks.every(isOffset))))
      throw ApiError.invalid('blocks must be a list of block numbers, or "all"', 'blocks');
    const lastSource = typeof body.lastSource === 'string' ? checkedKey(body.lastSource) : null;
    return this.objects.completeBlocks(checkedKey(key), uploadId, blocks, lastSource);
  }

  @Delete(':key/:uploadId')
  @HttpCode(204)
  async abort(@Param('key') key: string, @Param('uploadId') uploadId: string): Promise<void> {
    await this.objects.abortMultipart(checkedKey(key), uploadId);
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
