import { Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import type { JobHandlers } from '@app/queue';
import { JOB, QUEUE } from '@app/contracts';
import { ProcessorContext, QueueProcessor, type GiveUpHandlers } from '../jobs/queue-processor';
import { ArchiveBuildService } from './archive-build.service';

/** Consumer of the archive queue: one build-archive job per archive row. */
@Processor(QUEUE.archive, { autorun: false })
export class ArchiveProcessor extends QueueProcessor<typeof QUEUE.archive> {
  protected readonly handlers: JobHandlers<typeof QUEUE.archive> = {
    [JOB.buildArchive]: ({ archiveId }, _job, signal) => this.builds.build(archiveId, signal),
  };

  /** After the last try the row is marked failed, so the gateway answers 503 instead of waiting forever. */
  protected override readonly giveUps: GiveUpHandlers<typeof QUEUE.archive> = {
    [JOB.buildArchive]: ({ archiveId }, error) => this.builds.giveUp(archiveId, error.message),
  };

  constructor(
    @Inject(ArchiveBuildService) private readonly builds: ArchiveBuildService,
    @Inject(ProcessorContext) context: ProcessorContext,
  ) {
    super(context, { queue: QUEUE.archive, concurrency: (config) => config.ARCHIVE_CONCURRENCY });
  }
}
