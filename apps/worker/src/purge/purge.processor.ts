import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Job } from 'bullmq';
import { APP_CONFIG, GracefulShutdown, LOGGER, type AppLogger, type WorkerConfig } from '@app/common';
import { JobBus, runJob, type JobHandlers } from '@app/queue';
import { JOB, QUEUE } from '@app/contracts';
import { ActiveJobs } from '../jobs/active-jobs';
import { runWorker } from '../jobs/run-worker';
import { JobMetrics } from '../jobs/job-metrics';
import { PurgeService } from './purge.service';
import { SweepService } from './sweep.service';

/** Consumer of the purge queue: purge-object jobs and the periodic sweep. */
@Processor(QUEUE.purge, { autorun: false })
export class PurgeProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly active = new ActiveJobs();
  private reRegister?: NodeJS.Timeout;
  private readonly handlers: JobHandlers<typeof QUEUE.purge> = {
    [JOB.purgeObject]: async ({ objectId }, job) => this.counted(job, await this.purge.purgeObject(objectId)),
    [JOB.hashObject]: async ({ objectId }, job) => this.counted(job, await this.purge.hashObject(objectId)),
    [JOB.sweep]: async (_payload, job) => {
      const result = await this.sweeper.sweep({
        staleUploadSeconds: this.config.STALE_UPLOAD_SECONDS,
        deletedRowRetentionSeconds: this.config.TOMBSTONE_RETENTION_SECONDS,
        lostPurgeSeconds: this.config.LOST_PURGE_SECONDS,
      });
      this.counted(job, 'done');
      return result;
    },
  };

  constructor(
    @Inject(PurgeService) private readonly purge: PurgeService,
    @Inject(SweepService) private readonly sweeper: SweepService,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Inject(JobMetrics) private readonly metrics: JobMetrics,
    @Inject(GracefulShutdown) private readonly shutdown: GracefulShutdown,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.worker.concurrency = this.config.PURGE_CONCURRENCY;
    this.shutdown.onDrain(QUEUE.purge, (grace) => this.active.drain(this.worker, grace, this.logger));
    runWorker(this.worker, this.config.JOB_LOCK_MS);
    // One scheduler in Redis, however many workers register it: the sweep runs once per interval.
    await this.registerSweep();
    // Registered again now and then: a Redis that restarted without its data lost the scheduler, and with it
    // the sweep that re-queues what the restart lost (registering an existing one changes nothing).
    this.reRegister = setInterval(() => void this.registerSweep(), Math.max(this.config.SWEEP_INTERVAL_MS, 5_000));
    this.reRegister.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.reRegister);
  }

  private async registerSweep(): Promise<void> {
    try {
      await this.jobs.schedule(JOB.sweep, this.config.SWEEP_INTERVAL_MS, {});
    } catch (error) {
      this.logger.warn({ err: error }, 'could not register the sweep now; trying again');
    }
  }

  process(job: Job, token?: string): Promise<unknown> {
    return this.active.run(job, token, (signal) => runJob(QUEUE.purge, this.handlers, job, signal));
  }

  private counted<T extends string>(job: Job, outcome: T): T {
    this.metrics.count(job.name, outcome);
    return outcome;
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    this.metrics.count(job?.name ?? 'unknown', 'failed');
    this.logger.warn({ jobId: job?.id, job: job?.name, attempts: job?.attemptsMade, err: error }, 'job failed');
  }
}
