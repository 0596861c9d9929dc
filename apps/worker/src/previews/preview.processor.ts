import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { APP_CONFIG, LOGGER, requestContext, type AppLogger, type WorkerConfig } from '@app/common';
import { JOB, QUEUE, type ConvertPreviewPayload } from '@app/contracts';
import { toConversionError } from './conversion.error';
import { PreviewService } from './preview.service';

/**
 * Consumer of the preview queue. A permanent failure (unsupported, corrupt, not a PDF) is recorded and
 * not retried (UnrecoverableError); a transient one (timeout, crash) is retried with backoff, and
 * recorded once the last attempt fails, so the gateway can answer 502 with the reason.
 */
@Processor(QUEUE.preview, { autorun: false })
export class PreviewProcessor extends WorkerHost implements OnApplicationBootstrap {
  constructor(
    @Inject(PreviewService) private readonly previews: PreviewService,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    // A worker with previews off leaves the queue to workers that have them.
    if (!this.config.PREVIEW_ENABLED) return;
    this.worker.concurrency = this.config.PREVIEW_CONCURRENCY;
    void this.worker.run();
  }

  async process(job: Job<ConvertPreviewPayload>): Promise<unknown> {
    if (job.name !== JOB.convertPreview) throw new UnrecoverableError(`no handler for job ${job.name} on the preview queue`);
    const { previewId, generation, requestId } = job.data;
    return requestContext.run({ requestId: requestId ?? `job:${job.id}` }, async () => {
      try {
        return await this.previews.convert(previewId);
      } catch (error) {
        const failure = toConversionError(error);
        const lastAttempt = failure.isPermanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        if (lastAttempt) await this.previews.fail(previewId, generation, failure);
        this.logger.warn({ previewId, failure: failure.failure, permanent: failure.isPermanent, attempt: job.attemptsMade + 1, message: failure.message }, 'preview conversion failed');
        throw failure.isPermanent ? new UnrecoverableError(failure.message) : failure;
      }
    });
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.warn({ err: error }, 'preview worker error');
  }
}
