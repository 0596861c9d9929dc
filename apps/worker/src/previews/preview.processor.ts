import { Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import type { JobHandlers } from '@app/queue';
import { JOB, QUEUE } from '@app/contracts';
import { ProcessorContext, QueueProcessor, type GiveUpHandlers } from '../jobs/queue-processor';
import { toConversionError } from './conversion.error';
import { PreviewConversionService } from './preview-conversion.service';

/**
 * Consumer of the preview queue. A permanent failure (unsupported, corrupt, not a PDF) is recorded and
 * not retried; a transient one (timeout, crash) is retried with backoff, and recorded once the last
 * attempt fails, so the gateway can answer 502 with the reason (QueueProcessor's give-up policy).
 */
@Processor(QUEUE.preview, { autorun: false })
export class PreviewProcessor extends QueueProcessor<typeof QUEUE.preview> {
  protected readonly handlers: JobHandlers<typeof QUEUE.preview> = {
    [JOB.convertPreview]: ({ previewId }, _job, signal) => this.conversions.convert(previewId, signal),
  };

  protected override readonly giveUps: GiveUpHandlers<typeof QUEUE.preview> = {
    [JOB.convertPreview]: ({ previewId, generation }, error) =>
      this.conversions.fail(previewId, generation, toConversionError(error)),
  };

  constructor(
    @Inject(PreviewConversionService) private readonly conversions: PreviewConversionService,
    @Inject(ProcessorContext) context: ProcessorContext,
  ) {
    super(context, {
      queue: QUEUE.preview,
      concurrency: (config) => config.PREVIEW_CONCURRENCY,
      // A worker with previews off leaves the queue to workers that have them.
      isEnabled: (config) => config.PREVIEW_ENABLED,
      isPermanent: (error) => toConversionError(error).isPermanent,
    });
  }
}
