import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import type { Job } from 'bullmq';
import { APP_CONFIG, LOGGER, requestContext, type AppLogger, type WorkerConfig } from '@app/common';
import { JOB, JOB_NAMES_BY_QUEUE, QUEUE, type BuildArchivePayload } from '@app/contracts';
import { JobMetrics } from '../jobs/job-metrics';
import { ArchiveBuildService } from './archive-build.service';

/** Consumer of the archive queue: one build-archive job per session and manifest. */
@Processor(QUEUE.archive)
export class ArchiveProcessor extends WorkerHost implements OnApplicationBootstrap {
  constructor(
    @Inject(ArchiveBuildService) private readonly builds: ArchiveBuildService,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(JobMetrics) private readonly jobs: JobMetrics,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.ARCHIVE_CONCURRENCY;
  }

  async process(job: Job): Promise<unknown> {
    const payload = job.data as BuildArchivePayload;
    return requestContext.run({ requestId: payload.requestId ?? `job:${job.id}` }, async () => {
      if (job.name !== JOB.buildArchive) throw new Error(`no handler for job ${job.name}; known: ${JOB_NAMES_BY_QUEUE[QUEUE.archive].join(', ')}`);
      const outcome = await this.builds.build(payload.archiveId);
      this.jobs.count(job.name, outcome);
      return outcome;
    });
  }

  @OnWorkerEvent('failed')
  async onFailed(job: Job | undefined, error: Error): Promise<void> {
    this.jobs.count(job?.name ?? 'unknown', 'failed');
    this.logger.warn({ jobId: job?.id, job: job?.name, attempts: job?.attemptsMade, err: error }, 'job failed');
    if (!job || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    try {
      await this.builds.giveUp((job.data as BuildArchivePayload).archiveId, error.message);
    } catch (failure) {
      this.logger.error({ err: failure, jobId: job.id }, 'could not mark the archive failed');
    }
  }
}
