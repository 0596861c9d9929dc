import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import type { Job } from 'bullmq';
import { APP_CONFIG, GracefulShutdown, LOGGER, type AppLogger, type WorkerConfig } from '@app/common';
import { runJob, type JobHandlers } from '@app/queue';
import { JOB, parseJobPayload, QUEUE } from '@app/contracts';
import { ActiveJobs } from '../jobs/active-jobs';
import { runWorker } from '../jobs/run-worker';
import { JobMetrics } from '../jobs/job-metrics';
import { ArchiveBuildService } from './archive-build.service';

/** Consumer of the archive queue: one build-archive job per archive row. */
@Processor(QUEUE.archive, { autorun: false })
export class ArchiveProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly active = new ActiveJobs();
  private readonly handlers: JobHandlers<typeof QUEUE.archive> = {
    [JOB.buildArchive]: async ({ archiveId }, job, signal) => {
      const outcome = await this.builds.build(archiveId, signal);
      this.metrics.count(job.name, outcome);
      return outcome;
    },
  };

  constructor(
    @Inject(ArchiveBuildService) private readonly builds: ArchiveBuildService,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(JobMetrics) private readonly metrics: JobMetrics,
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Inject(GracefulShutdown) private readonly shutdown: GracefulShutdown,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.ARCHIVE_CONCURRENCY;
    this.shutdown.onDrain(QUEUE.archive, (grace) => this.active.drain(this.worker, grace, this.logger));
    runWorker(this.worker, this.config.JOB_LOCK_MS);
  }

  process(job: Job, token?: string): Promise<unknown> {
    return this.active.run(job, token, (signal) => runJob(QUEUE.archive, this.handlers, job, signal));
  }

  /** After the last try the row is marked failed, so the gateway answers 503 instead of waiting forever. */
  @OnWorkerEvent('failed')
  async onFailed(job: Job | undefined, error: Error): Promise<void> {
    this.metrics.count(job?.name ?? 'unknown', 'failed');
    this.logger.warn({ jobId: job?.id, job: job?.name, attempts: job?.attemptsMade, err: error }, 'job failed');
    if (!job || job.name !== JOB.buildArchive || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    try {
      await this.builds.giveUp(parseJobPayload(JOB.buildArchive, job.data).archiveId, error.message);
    } catch (failure) {
      this.logger.error({ err: failure, jobId: job.id }, 'could not mark the archive failed');
    }
  }
}
