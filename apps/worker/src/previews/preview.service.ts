import { Inject, Injectable } from '@nestjs/common';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { APP_CONFIG, LOGGER, PurgeProducer, StorageClient, type AppLogger, type WorkerConfig } from '@app/common';
import { PrismaService, PreviewRepository, StoredObjectRepository } from '@app/db';
import { ConversionError, toConversionError } from './conversion.error';
import { PreviewConverters } from './preview-converters.provider';
import { PreviewMetrics } from './preview-metrics';

export type PreviewOutcome = 'converted' | 'skipped';

/** The largest PDF a conversion may store (the converters also cap what they write). */
const MAX_PDF_BYTES = 512 * 1024 * 1024;

/**
 * Converts the source of one previews row to PDF: the source object streams to a private temp dir,
 * the converter registry picks the converter, the checked PDF streams into a new stored object, and
 * one transaction records it READY. A row that went away meanwhile (its content deleted) keeps nothing.
 */
@Injectable()
export class PreviewService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(PreviewRepository) private readonly previews: PreviewRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
    @Inject(PreviewConverters) private readonly converters: PreviewConverters,
    @Inject(PreviewMetrics) private readonly metrics: PreviewMetrics,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Throws ConversionError (permanent or transient) when the conversion fails. */
  async convert(previewId: string): Promise<PreviewOutcome> {
    const row = await this.previews.findForJob(previewId);
    if (!row || row.status !== 'PENDING') return 'skipped';
    const source = await this.objects.findForPurge(row.sourceObjectId);
    if (!source || source.status !== 'READY') throw new ConversionError('corrupt_document', 'the source file was deleted before it could be converted');

    const registry = await this.converters.get();
    const converterName = registry.select({ contentType: row.sourceContentType, filename: row.sourceFilename })?.name ?? 'none';
    const done = this.metrics.start();
    await mkdir(this.converters.jobsDir, { recursive: true, mode: 0o700 });
    const dir = await mkdtemp(join(this.converters.jobsDir, 'job-'));
    try {
      const input = join(dir, 'source');
      const output = join(dir, 'preview.pdf');
      const object = await this.storage.getObject(source.storageKey);
      await pipeline(object.body, createWriteStream(input, { mode: 0o600 }));
      const signal = AbortSignal.timeout(this.config.PREVIEW_CONVERSION_TIMEOUT_MS + 15_000);
      const converter = await registry.convert({ path: input, filename: row.sourceFilename, contentType: row.sourceContentType }, { path: output }, signal);
      const stored = await this.objects.createUploading(row.principalId);
      try {
        const receipt = await this.storage.putObject(stored.storageKey, createReadStream(output), { maxBytes: MAX_PDF_BYTES, contentType: 'application/pdf' });
        await this.prisma.$transaction(async (tx) => {
          await this.objects.markReady(tx, row.principalId, stored.id, receipt.bytes, receipt.sha256);
          const recorded = await this.previews.markReady(tx, row.id, row.generation, { objectId: stored.id, bytes: receipt.bytes, sha256: receipt.sha256, converter: converter.name });
          if (!recorded) throw new PreviewGone();
        });
        done(converter.name, 'ok');
        this.logger.info({ previewId, converter: converter.name, pdfBytes: receipt.bytes }, 'preview converted');
        return 'converted';
      } catch (error) {
        await this.objects.abandonUpload(stored.id);
        await this.purges.enqueue([stored.id]);
        if (error instanceof PreviewGone) {
          done(converter.name, 'gone');
          return 'skipped';
        }
        throw error;
      }
    } catch (error) {
      const failure = toConversionError(error);
      done(converterName, failure.failure);
      throw failure;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Records the final failure so waiting gateways answer 502 with the reason. */
  async fail(previewId: string, generation: number, error: ConversionError): Promise<void> {
    await this.previews.markFailed(previewId, generation, { code: error.failure, message: error.message, permanent: error.isPermanent });
  }
}

class PreviewGone extends Error {}
