import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUE } from '@app/contracts';
import { ArchiveBuildService } from './archive-build.service';
import { ArchiveProcessor } from './archive.processor';
import { ZipWriter } from './zip-writer';

/** Builds session archives from the archive queue. */
@Module({
  imports: [BullModule.registerQueue({ name: QUEUE.archive })],
  providers: [ZipWriter, ArchiveBuildService, ArchiveProcessor],
})
export class ArchivesModule {}
