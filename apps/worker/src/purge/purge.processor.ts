import { Processor } from '@nestjs/bullmq';
import { Inject, type OnModuleDestroy } from '@nestjs/common';
import { JobBus, type JobHandlers } from '@app/queue';
import { JOB, QUEUE } from '@app/contracts';
import { ProcessorContext, QueueProcessor } from '../jobs/queue-processor';
import { PurgeService } from './purge.service';
import { SweepService } from './sweep.service';

/**
 * Consumer of the purge queue: purge-object jobs and the periodic sweep. Nothing is marked failed: an object
 * whose purge gave up stays PURGING, and the sweep queues it again (LOST_PURGE_SECONDS).
 */
@Processor(QUEUE.purge, { autorun: false })
export class PurgeProcessor extends QueueProcessor<typeof QUEUE.purge> implements OnModuleDestroy {
  private reRegister?: NodeJS.Timeout;
  protected readonly handlers: JobHandlers<typeof QUEUE.purge> = {
    [JOB.purgeObject]: ({ objectId }) => this.purge.purgeObject(objectId),
    [JOB.hashObject]: ({ objectId }) => this.purge.hashObject(objectId),
    [JOB.sweep]: () =>
      this.sweeper.sweep({
        staleUploadSeconds: this.config.STALE_UPLOAD_SECONDS,
        deletedRowRetentionSeconds: this.config.TOMBSTONE_RETENTION_SECONDS,
        lostPurgeSeconds: this.config.LOST_PURGE_SECONDS,
        lostJobSeconds: this.config.LOST_JOB_SECONDS,
      }),
  };

  constructor(
    @Inject(PurgeService) private readonly purge: PurgeService,
    @Inject(SweepService) private readonly sweeper: SweepService,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(ProcessorContext) context: ProcessorContext,
  ) {
    super(context, { queue: QUEUE.purge, concurrency: (config) => config.PURGE_CONCURRENCY });
  }

  override async onApplicationBootstrap(): Promise<void> {
    await super.onApplicationBootstrap();
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
}
