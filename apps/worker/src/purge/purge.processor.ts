import { InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { APP_CONFIG, LOGGER, requestContext, type AppLogger, type WorkerConfig } from '@app/common';
import { JOB, JOB_NAMES_BY_QUEUE, QUEUE, SWEEP_JOB_ID, type PurgeObjectPayload } from '@app/contracts';
import { JobMetrics } from '../jobs/job-metrics';
import { PurgeService } from './purge.service';

/** Consumer of the purge queue: purge-object jobs and the periodic sweep. */
@Processor(QUEUE.purge)
export class PurgeProcessor extends WorkerHost implements OnApplicationBootstrap {
  constructor(
    @Inject(PurgeService) private readonly purge: PurgeService,
    @InjectQueue(QUEUE.purge) private readonly queue: Queue,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Inject(JobMetrics) private readonly jobs: JobMetrics,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.worker.concurrency = this.config.PURGE_CONCURRENCY;
    await this.queue.upsertJobScheduler(SWEEP_JOB_ID, { every: this.config.SWEEP_INTERVAL_MS }, { name: JOB.sweep, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } });
  }

  async process(job: Job): Promise<unknown> {
    const requestId = (job.data as Partial<PurgeObjectPayload>).requestId ?? `job:${job.id}`;
    return requestContext.run({ requestId }, async () => {
      switch (job.name) {
        case JOB.purgeObject: {
          const outcome = await this.purge.purgeObject((job.data as PurgeObjectPayload).objectId);
          this.jobs.count(job.name, outcome);
          return outcome;
        }
        case JOB.sweep: {
          const result = await this.purge.sweep(this.config.STALE_UPLOAD_SECONDS, this.config.TOMBSTONE_RETENTION_SECONDS);
          this.jobs.count(job.name, 'done');
          return result;
        }
        default:
          throw new Error(`no handler for job ${job.name}; known: ${JOB_NAMES_BY_QUEUE[QUEUE.purge].join(', ')}`);
      }
    });
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    this.jobs.count(job?.name ?? 'unknown', 'failed');
    this.logger.warn({ jobId: job?.id, job: job?.name, attempts: job?.attemptsMade, err: error }, 'job failed');
  }
}
