import { Controller, Delete, Head, HttpCode, Inject, Param, Patch, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiError, APP_CONFIG, type GatewayConfig } from '@app/common';
import type { UploadRow } from '@app/db';
import { PrincipalId } from '../auth/auth';
import { Concurrency } from '../limits/concurrency-limits';
import { byteHeader, parseChecksum, parseTusMetadata, TUS_CONTENT_TYPE } from './tus-protocol';
import { TusService } from './tus.service';

const header = (req: Request, name: string) => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};
const isOffsetStream = (req: Request) => (header(req, 'content-type') ?? '').split(';')[0].trim() === TUS_CONTENT_TYPE;
const hasBody = (req: Request) =>
  Number(header(req, 'content-length') ?? 0) > 0 || header(req, 'transfer-encoding') !== undefined;

/** tus 1.0 at /v1/tus (the creation endpoint) and /v1/tus/{id} (docs/api.md §2b). */
@Controller('v1/tus')
export class TusController {
  constructor(
    @Inject(TusService) private readonly tus: TusService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** creation, and creation-with-upload when the request carries bytes. */
  @Post()
  @Concurrency('uploads')
  async create(@PrincipalId() principalId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    if (header(req, 'upload-defer-length') !== undefined)
      throw ApiError.invalid('Upload-Defer-Length is not supported; send Upload-Length.', 'Upload-Defer-Length');
    const length = byteHeader(req.headers['upload-length'], 'Upload-Length');
    const rawMetadata = header(req, 'upload-metadata') ?? null;
    let upload = await this.tus.create(principalId, length, parseTusMetadata(rawMetadata ?? undefined), rawMetadata);
    let offset = 0;
    if (hasBody(req) && isOffsetStream(req)) {
      ({ offset, upload } = await this.tus.patch(principalId, upload.id, this.patchOf(req, 0)));
    } else if (length === 0) {
      ({ offset, upload } = await this.tus.patch(principalId, upload.id, this.patchOf(req, 0)));
    }
    res.status(201).set({ location: this.location(req, upload.id), 'upload-offset': String(offset) });
    this.expiry(res, upload).end();
  }

  @Head(':id')
  async head(@PrincipalId() principalId: string, @Param('id') id: string, @Res() res: Response): Promise<void> {
    const upload = await this.tus.find(principalId, id);
    const offset = upload.status === 'completed' ? Number(upload.bytes) : Number(upload.offsetBytes);
    res.status(200).set({
      'cache-control': 'no-store',
      'upload-offset': String(offset),
      'upload-length': String(upload.bytes),
      ...(upload.tusMetadata ? { 'upload-metadata': upload.tusMetadata } : {}),
      ...(upload.fileId ? { 'x-file-id': upload.fileId } : {}),
    });
    this.expiry(res, upload).end();
  }

  @Patch(':id')
  @Concurrency('uploads')
  async patch(
    @PrincipalId() principalId: string,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    if (!isOffsetStream(req))
      throw new ApiError('unsupported_media_type', `A PATCH must have Content-Type: ${TUS_CONTENT_TYPE}.`);
    const offset = byteHeader(req.headers['upload-offset'], 'Upload-Offset');
    const { offset: now, upload } = await this.tus.patch(principalId, id, this.patchOf(req, offset));
    res.status(204).set({ 'upload-offset': String(now), ...(upload.fileId ? { 'x-file-id': upload.fileId } : {}) });
    this.expiry(res, upload).end();
  }

  @Delete(':id')
  @HttpCode(204)
  async terminate(@PrincipalId() principalId: string, @Param('id') id: string): Promise<void> {
    await this.tus.terminate(principalId, id);
  }

  private patchOf(req: Request, offset: number) {
    const length = Number(header(req, 'content-length'));
    return {
      offset,
      body: req,
      declaredBytes: header(req, 'content-length') !== undefined && Number.isSafeInteger(length) ? length : null,
      isComplete: () => req.complete,
      checksum: parseChecksum(header(req, 'upload-checksum')),
    };
  }

  private expiry(res: Response, upload: UploadRow): Response {
    if (upload.status === 'pending') res.set('upload-expires', upload.expiresAt.toUTCString());
    return res;
  }

  /** Where the upload lives: under the public base URL when one is configured (behind a load balancer). */
  private location(req: Request, id: string): string {
    const base = this.config.UHP_PUBLIC_BASE_URL ?? `${req.protocol}://${header(req, 'host')}`;
    return `${base.replace(/\/+$/, '')}/v1/tus/${id}`;
  }
}
