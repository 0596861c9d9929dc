import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { ApiError, currentRequestId, LOGGER, type AppLogger } from '@app/common';
import { ARCHIVE_JOB_OPTIONS, archiveJobId, JOB, QUEUE, type BuildArchivePayload } from '@app/contracts';

/** Hands archive builds to the worker. One job per session and manifest: adding it again is a no-op. */
@Injectable()
export class ArchiveProducer {
  constructor(
    @InjectQueue(QUEUE.archive) private readonly queue: Queue,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async enqueue(sessionId: string, manifestHash: string, archiveId: string): Promise<void> {
    const requestId = currentRequestId();
    try {
      await this.queue.add(JOB.buildArchive, { archiveId, requestId } satisfies BuildArchivePayload, { ...ARCHIVE_JOB_OPTIONS, jobId: archiveJobId(sessionId, manifestHash) });
    } catch (error) {
      // Nothing else would ever build it: the client must hear that now, not wait on a 202 forever.
      this.logger.warn({ err: error, archiveId }, 'could not enqueue an archive build');
      throw new ApiError('service_unavailable', 'Archives cannot be built right now; try again.');
    }
  }
}
