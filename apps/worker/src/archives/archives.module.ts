import { Module } from '@nestjs/common';
import { ArchiveArtifacts } from './archive-artifacts';
import { ArchiveBuildService } from './archive-build.service';
import { ArchiveProcessor } from './archive.processor';
import { ZipWriter } from './zip-writer';

/** Builds session archives from the archive queue. */
@Module({ providers: [ZipWriter, ArchiveArtifacts, ArchiveBuildService, ArchiveProcessor] })
export class ArchivesModule {}
