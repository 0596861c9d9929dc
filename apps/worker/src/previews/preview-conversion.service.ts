import { Inject, Injectable } from '@nestjs/common';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { LOGGER, type AppLogger } from '@app/common';
import { PreviewRepository } from '@app/db';
import { ObjectStager, UnitOfWork } from '@app/lifecycle';
import { ConversionError, toConversionError } from './conversion.error';
import { PreviewConverters } from './preview-converters.provider';
import { PreviewMetrics } from './preview-metrics';
import { PreviewSources } from './preview-sources';

export type PreviewOutcome = 'converted' | 'skipped';

/** The largest PDF a conversion may store (the converters also cap what they write). */
const MAX_PDF_BYTES = 512 * 1024 * 1024;

/**
 * Converts the source of one previews row to PDF: the source streams to a private temp dir, the
 * converter registry picks the converter, the checked PDF is staged, and one unit of work records it
 * READY. A row that went away meanwhile (its content deleted) keeps nothing: the staged PDF is discarded.
 */
@Injectable()
export class PreviewConversionService {
  constructor(
    @Inject(PreviewRepository) private readonly previews: PreviewRepository,
    @Inject(PreviewSources) private readonly sources: PreviewSources,
    @Inject(PreviewConverters) private readonly converters: PreviewConverters,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(PreviewMetrics) private readonly metrics: PreviewMetrics,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /**
   * Throws ConversionError (permanent or transient) when the conversion fails. `stop` aborts it (the
   * worker is stopping): the converter is killed and nothing is kept.
   */
  async convert(previewId: string, stop: AbortSignal): Promise<PreviewOutcome> {
    const row = await this.previews.findForJob(previewId);
    if (!row || row.status !== 'PENDING') return 'skipped';
    const registry = await this.converters.get();
    const selected = registry.select({ contentType: row.sourceContentType, filename: row.sourceFilename });
    const converterName = selected?.name ?? 'none';
    const done = this.metrics.start();
    await mkdir(this.converters.jobsDir, { recursive: true, mode: 0o700 });
    const dir = await mkdtemp(join(this.converters.jobsDir, 'job-'));
    try {
      const input = join(dir, 'source');
      const output = join(dir, 'preview.pdf');
      // No converter, or over its size limit: refused before the source is downloaded.
      if (!selected)
        throw new ConversionError(
          'unsupported_type',
          `no preview for ${row.sourceFilename} (${row.sourceContentType})`,
        );
      await this.sources.fetch(row.sourceObjectId, input, selected.maxInputBytes);
      const converter = await registry.convert(
        { path: input, filename: row.sourceFilename, contentType: row.sourceContentType },
        { path: output },
        AbortSignal.any([AbortSignal.timeout(this.converters.jobTimeoutMs), stop]),
      );
      const pdf = await this.stager.stage(row.principalId, createReadStream(output), {
        maxBytes: MAX_PDF_BYTES,
        contentType: 'application/pdf',
      });
      const recorded = await this.uow.run(
        async (work) => {
          const kept = await work.previews.markReady(row.id, row.generation, {
            objectId: pdf.id,
            bytes: pdf.bytes,
            sha256: pdf.sha256,
            converter: converter.name,
          });
          if (kept) await work.adopt(pdf);
          return kept;
        },
        { staged: [pdf] },
      );
      done(converter.name, recorded ? 'ok' : 'gone');
      if (!recorded) return 'skipped';
      this.logger.info({ previewId, converter: converter.name, pdfBytes: pdf.bytes }, 'preview converted');
      return 'converted';
    } catch (error) {
      const failure = toConversionError(error);
      done(converterName, failure.failure);
      throw failure;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * Records the final failure so waiting gateways answer 502 with the reason: the failure class and its fixed
   * sentence, never the error's own message (paths, converter output), which only the worker's log gets.
   */
  async fail(previewId: string, generation: number, error: ConversionError): Promise<void> {
    await this.previews.markFailed(previewId, generation, {
      code: error.failure,
      message: error.publicMessage,
      permanent: error.isPermanent,
    });
  }
}
