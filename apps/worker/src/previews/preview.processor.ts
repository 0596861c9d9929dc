import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { APP_CONFIG, GracefulShutdown, LOGGER, type AppLogger, type WorkerConfig } from '@app/common';
import { runJob, type JobHandlers } from '@app/queue';
import { JOB, QUEUE } from '@app/contracts';
import { ActiveJobs } from '../jobs/active-jobs';
import { runWorker } from '../jobs/run-worker';
import { toConversionError } from './conversion.error';
import { PreviewConversionService } from './preview-conversion.service';

/**
 * Consumer of the preview queue. A permanent failure (unsupported, corrupt, not a PDF) is recorded and
 * not retried (UnrecoverableError); a transient one (timeout, crash) is retried with backoff, and
 * recorded once the last attempt fails, so the gateway can answer 502 with the reason.
 */
@Processor(QUEUE.preview, { autorun: false })
export class PreviewProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly active = new ActiveJobs();
  private readonly handlers: JobHandlers<typeof QUEUE.preview> = {
    [JOB.convertPreview]: async ({ previewId, generation }, job, signal) => {
      try {
        return await this.conversions.convert(previewId, signal);
      } catch (error) {
        // Stopping: the job goes back to the queue untouched (ActiveJobs), not recorded as failed.
        if (signal.aborted) throw error;
        const failure = toConversionError(error);
        const lastAttempt = failure.isPermanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        if (lastAttempt) await this.conversions.fail(previewId, generation, failure);
        this.logger.warn(
          {
            previewId,
            failure: failure.failure,
            permanent: failure.isPermanent,
            attempt: job.attemptsMade + 1,
            message: failure.message,
            cause: failure.cause instanceof Error ? failure.cause.message : undefined,
          },
          'preview conversion failed',
        );
        throw failure.isPermanent ? new UnrecoverableError(failure.message) : failure;
      }
    },
  };

  constructor(
    @Inject(PreviewConversionService) private readonly conversions: PreviewConversionService,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Inject(GracefulShutdown) private readonly shutdown: GracefulShutdown,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    // A worker with previews off leaves the queue to workers that have them.
    if (!this.config.PREVIEW_ENABLED) return;
    this.worker.concurrency = this.config.PREVIEW_CONCURRENCY;
    this.shutdown.onDrain(QUEUE.preview, (grace) => this.active.drain(this.worker, grace, this.logger));
    runWorker(this.worker, this.config.JOB_LOCK_MS);
  }

  process(job: Job, token?: string): Promise<unknown> {
    return this.active.run(job, token, (signal) => runJob(QUEUE.preview, this.handlers, job, signal));
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.warn({ err: error }, 'preview worker error');
  }
}
