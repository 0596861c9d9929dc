import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { JOB, PURGE_JOB_OPTIONS, purgeJobId, QUEUE, type PurgeObjectPayload } from '@app/contracts';
import { LOGGER, type AppLogger } from '../logging/logging.module';
import { currentRequestId } from '../logging/request-context';

/**
 * Hands objects whose last reference went away to the worker. Called after the transaction that
 * released them commits; if Redis is down the worker's sweep finds them PURGING and enqueues them.
 */
@Injectable()
export class PurgeProducer {
  constructor(
    @InjectQueue(QUEUE.purge) private readonly queue: Queue,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async enqueue(objectIds: string[]): Promise<void> {
    if (objectIds.length === 0) return;
    const requestId = currentRequestId();
    try {
      await this.queue.addBulk(
        objectIds.map((objectId) => ({
          name: JOB.purgeObject,
          data: { objectId, requestId } satisfies PurgeObjectPayload,
          opts: { ...PURGE_JOB_OPTIONS, jobId: purgeJobId(objectId) },
        })),
      );
    } catch (error) {
      this.logger.warn({ err: error, objectIds }, 'could not enqueue purges; the worker sweep will pick them up');
    }
  }

  async ping(): Promise<void> {
    await this.queue.count();
  }
}
