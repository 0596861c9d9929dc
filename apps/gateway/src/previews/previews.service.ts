import { Inject, Injectable } from '@nestjs/common';
import { ApiError, APP_CONFIG, LOGGER, NO_RETRY_HEADERS, type AppLogger, type GatewayConfig } from '@app/common';
import { JobBus } from '@app/queue';
import { JOB, JOBS, PREVIEW_PIPELINE_VERSION, previewFormatKey, previewTypeOf } from '@app/contracts';
import { PreviewRepository, type ContainerFileRow, type PreviewRow } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import { ContainerFilesService } from '../containers/container-files.service';
import { type Download, Downloads, rebuiltWhenMissing } from '../downloads/downloads';
import { JobCompletions } from '../jobs/job-completions';
import { ConverterAvailability } from './converter-availability';

/** What a client over its pending-previews limit waits before it asks again. */
const PENDING_RETRY_AFTER_SECONDS = 5;

/** `report.docx` → `report.pdf`. */
export function pdfFilename(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return `${dot > 0 ? filename.slice(0, dot) : filename}.pdf`;
}

const failed = (message: string, permanent: boolean) =>
  new ApiError('preview_failed', message, null, permanent ? { ...NO_RETRY_HEADERS } : {});

/**
 * GET …/files/{fid}/pdf. A PDF is served as is. Anything else is converted once per principal and
 * content: the first request creates the previews row and enqueues one job (a deterministic job id,
 * so concurrent requests share it), every request waits up to the preview timeout for the row to turn
 * READY, and a READY preview downloads from the bucket.
 */
@Injectable()
export class PreviewsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(ContainerFilesService) private readonly containerFiles: ContainerFilesService,
    @Inject(PreviewRepository) private readonly previews: PreviewRepository,
    @Inject(ConverterAvailability) private readonly converters: ConverterAvailability,
    @Inject(Downloads) private readonly downloads: Downloads,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(JobCompletions) private readonly completions: JobCompletions,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** `isGone` tells a waiting request that its client hung up: it stops waiting. */
  async preview(principalId: string, containerId: string, fileId: string, isGone: () => boolean): Promise<Download> {
    const file = await this.containerFiles.get(principalId, containerId, fileId);
    if (!this.config.PREVIEW_ENABLED)
      throw new ApiError('preview_unavailable', 'Previews are turned off on this server.');
    const type = previewTypeOf(file);
    if (!type)
      throw failed(
        `No preview for this type of file (${file.contentType}); see GET /v1/limits for the formats that preview.`,
        true,
      );
    if (!(await this.converters.canConvert(type.kind)))
      throw new ApiError('preview_unavailable', `No converter for ${type.kind} documents is installed on this server.`);
    const filename = pdfFilename(file.filename);
    if (type.kind === 'pdf') return this.downloads.of({ ...file, contentType: 'application/pdf', filename }, 'inline');
    const preview = await this.ready(principalId, file, previewFormatKey(type), isGone);
    const download = this.downloads.of(
      {
        storageKey: preview.storageKey!,
        sha256: preview.pdfSha256!,
        bytes: preview.bytes!,
        contentType: 'application/pdf',
        filename,
      },
      'inline',
    );
    return rebuiltWhenMissing(
      download,
      () => this.dropLost(principalId, preview),
      () => failed('The cached PDF of this file was missing from storage; the next request converts it again.', false),
    );
  }

  private async dropLost(principalId: string, preview: PreviewRow): Promise<void> {
    this.logger.warn(
      { previewId: preview.id, storageKey: preview.storageKey },
      'a ready preview has no PDF in the bucket: dropping it so that it converts again',
    );
    await this.uow.run(async (work) =>
      work.release(await work.previews.dropLost(principalId, preview.id, preview.objectId!)),
    );
  }

  private async ready(
    principalId: string,
    file: ContainerFileRow,
    format: string,
    isGone: () => boolean,
  ): Promise<PreviewRow> {
    const source = { objectId: file.objectId, filename: file.filename, contentType: file.contentType };
    // Previews are shared by content; a file not hashed yet shares by its (immutable) object instead.
    const key = { sha256: file.sha256 ?? `object-${file.objectId}`, format, version: PREVIEW_PIPELINE_VERSION };
    let preview = await this.previews.find(principalId, key);
    if (!preview || (preview.status === 'FAILED' && !preview.permanent)) await this.refuseOverPendingLimit(principalId);
    preview ??= await this.previews.findOrCreate(principalId, key, source);
    if (preview.status === 'FAILED' && !preview.permanent)
      preview = (await this.previews.retry(principalId, preview.id, preview.generation, source)) ?? preview;
    if (preview.status === 'PENDING') {
      // Its place among the principal's pending previews: one principal's backlog waits behind another's first.
      const place = await this.previews.countPending(principalId);
      const job = { previewId: preview.id, generation: preview.generation };
      await this.jobs.add(JOB.convertPreview, [job], { priority: place });
      preview = await this.waitFor(principalId, preview, isGone);
    }
    if (preview.status === 'READY' && preview.storageKey) return preview;
    if (preview.status === 'FAILED')
      throw failed(
        `The file could not be converted to PDF (${preview.errorCode}): ${preview.errorMessage}`,
        preview.permanent,
      );
    throw failed(
      `The preview did not finish within ${this.config.PREVIEW_TIMEOUT_MS} ms; ` +
        'it goes on in the background, so try again shortly.',
      false,
    );
  }

  /** A principal with its quota of conversions pending queues no more until some finish. */
  private async refuseOverPendingLimit(principalId: string): Promise<void> {
    const pending = await this.previews.countPending(principalId);
    const max = this.config.UHP_MAX_PENDING_PREVIEWS;
    if (pending < max) return;
    throw new ApiError('rate_limited', `${pending} previews of yours are converting; at most ${max} at once.`, null, {
      'retry-after': String(PENDING_RETRY_AFTER_SECONDS),
    });
  }

  /**
   * Waits until the row leaves PENDING (woken when its job finishes; the row decides), the preview timeout
   * passes, or the client goes away.
   */
  private async waitFor(principalId: string, pending: PreviewRow, isGone: () => boolean): Promise<PreviewRow> {
    let row = pending;
    const jobId = JOBS[JOB.convertPreview].jobId({ previewId: pending.id, generation: pending.generation });
    const finished = await this.completions.waitFor(jobId, {
      timeoutMs: this.config.PREVIEW_TIMEOUT_MS,
      isGone,
      check: async () => {
        row = (await this.previews.findForOwner(principalId, pending.id)) ?? row;
        return row.status === 'PENDING' ? undefined : row;
      },
    });
    return finished ?? row;
  }
}
