import { Module } from '@nestjs/common';
import { JobsModule } from '../jobs/jobs.module';
import { ArchivesController } from './archives.controller';
import { ArchivesService } from './archives.service';

@Module({ imports: [JobsModule], controllers: [ArchivesController], providers: [ArchivesService] })
export class ArchivesModule {}
