import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { Request, Response } from 'express';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, APP_CONFIG, currentRequestId, LOGGER, NO_RETRY_HEADERS, type AppLogger, type GatewayConfig } from '@app/common';
import {
  CONVERTER_OF_KIND,
  JOB,
  PREVIEW_JOB_OPTIONS,
  PREVIEW_PIPELINE_VERSION,
  previewFormatKey,
  previewJobId,
  previewTypeOf,
  QUEUE,
  supportedExtensions,
  type ConvertPreviewPayload,
  type PreviewKind,
} from '@app/contracts';
import { PreviewRepository, type ContainerFileRow, type PreviewRow } from '@app/db';
import { ContainerFilesService } from '../containers/container-files.service';
import { DownloadService } from '../downloads/download.service';

/** How often a waiting request looks at the previews row. */
const POLL_MS = 100;
/** Converter availability as the workers last recorded it is re-read at most this often. */
const AVAILABILITY_CACHE_MS = 5_000;
/** A converter no worker has vouched for within this long counts as not installed. */
const AVAILABILITY_MAX_AGE_MS = 24 * 3600 * 1000;

/** `report.docx` → `report.pdf`. */
export function pdfFilename(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return `${dot > 0 ? filename.slice(0, dot) : filename}.pdf`;
}

const failed = (message: string, permanent: boolean) => new ApiError('preview_failed', message, null, permanent ? { ...NO_RETRY_HEADERS } : {});

/**
 * GET …/files/{fid}/pdf (PROFILE §6). A PDF is served as is. Anything else is converted once per
 * principal and content: the first request creates the previews row and enqueues one job (a
 * deterministic job id, so concurrent requests share it), every request waits up to the preview
 * timeout for the row to turn READY, and a READY preview streams from the bucket like a download.
 */
@Injectable()
export class PreviewsService {
  private available: { at: number; names: Promise<Set<string>> } | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(ContainerFilesService) private readonly containerFiles: ContainerFilesService,
    @Inject(PreviewRepository) private readonly previews: PreviewRepository,
    @Inject(DownloadService) private readonly downloads: DownloadService,
    @InjectQueue(QUEUE.preview) private readonly queue: Queue,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async send(req: Request, res: Response, principalId: string, containerId: string, fileId: string): Promise<void> {
    const file = await this.containerFiles.get(principalId, containerId, fileId);
    if (!this.config.PREVIEW_ENABLED) throw new ApiError('preview_unavailable', 'Previews are turned off on this server.');
    const type = previewTypeOf(file);
    if (!type) throw failed(`No preview for this type of file (${file.contentType}); see GET /v1/limits for the formats that preview.`, true);
    if (!(await this.availableConverters()).has(CONVERTER_OF_KIND[type.kind])) {
      throw new ApiError('preview_unavailable', `No converter for ${type.kind} documents is installed on this server.`);
    }
    const filename = pdfFilename(file.filename);
    if (type.kind === 'pdf') return this.downloads.send(req, res, { ...file, contentType: 'application/pdf', filename }, 'inline');

    const preview = await this.ready(req, principalId, file, previewFormatKey(type));
    await this.downloads.send(req, res, { storageKey: preview.storageKey!, sha256: preview.pdfSha256!, bytes: preview.bytes!, contentType: 'application/pdf', filename }, 'inline');
  }

  /** The formats (extensions) some worker can preview now, for GET /v1/limits. */
  async formats(): Promise<string[]> {
    if (!this.config.PREVIEW_ENABLED) return [];
    const available = await this.availableConverters();
    const byKind = supportedExtensions();
    return (Object.keys(byKind) as PreviewKind[]).filter((kind) => available.has(CONVERTER_OF_KIND[kind])).flatMap((kind) => byKind[kind]).sort();
  }

  private async ready(req: Request, principalId: string, file: ContainerFileRow, format: string): Promise<PreviewRow> {
    const source = { objectId: file.objectId, filename: file.filename, contentType: file.contentType };
    let preview = await this.previews.findOrCreate(principalId, { sha256: file.sha256, format, version: PREVIEW_PIPELINE_VERSION }, source);
    if (preview.status === 'FAILED' && !preview.permanent) preview = (await this.previews.retry(principalId, preview.id, preview.generation, source)) ?? preview;
    if (preview.status === 'PENDING') {
      await this.enqueue(preview);
      preview = await this.waitFor(req, principalId, preview);
    }
    if (preview.status === 'READY' && preview.storageKey) return preview;
    if (preview.status === 'FAILED') throw failed(`The file could not be converted to PDF (${preview.errorCode}): ${preview.errorMessage}`, preview.permanent);
    throw failed(`The preview did not finish within ${this.config.PREVIEW_TIMEOUT_MS} ms; it goes on in the background, so try again shortly.`, false);
  }

  private async enqueue(preview: PreviewRow): Promise<void> {
    const data: ConvertPreviewPayload = { previewId: preview.id, generation: preview.generation, requestId: currentRequestId() };
    try {
      await this.queue.add(JOB.convertPreview, data, { ...PREVIEW_JOB_OPTIONS, jobId: previewJobId(preview.id, preview.generation) });
    } catch (error) {
      this.logger.warn({ err: error, previewId: preview.id }, 'could not enqueue a preview');
      throw new ApiError('service_unavailable', 'The preview queue is unavailable; try again.');
    }
  }

  /** Polls the row until it leaves PENDING, the preview timeout passes, or the client goes away. */
  private async waitFor(req: Request, principalId: string, pending: PreviewRow): Promise<PreviewRow> {
    const deadline = Date.now() + this.config.PREVIEW_TIMEOUT_MS;
    let row = pending;
    while (Date.now() < deadline && !req.destroyed) {
      await sleep(POLL_MS);
      row = (await this.previews.findForOwner(principalId, pending.id)) ?? row;
      if (row.status !== 'PENDING') return row;
    }
    return row;
  }

  private availableConverters(): Promise<Set<string>> {
    if (!this.available || Date.now() - this.available.at > AVAILABILITY_CACHE_MS) {
      const names = this.previews.availableConverters(AVAILABILITY_MAX_AGE_MS);
      this.available = { at: Date.now(), names };
      // Nothing found is not cached: a worker that has just started is about to record its converters.
      names.then((found) => found.size === 0 && (this.available = null)).catch(() => (this.available = null));
    }
    return this.available.names;
  }
}
