import { Module } from '@nestjs/common';
import { JobCompletions } from './job-completions';
import { JobEvents, QueueJobEvents } from './job-events';

/** Waiting for jobs: one job-events listener per gateway process and the requests it wakes. */
@Module({
  providers: [JobCompletions, { provide: JobEvents, useClass: QueueJobEvents }],
  exports: [JobCompletions],
})
export class JobsModule {}
