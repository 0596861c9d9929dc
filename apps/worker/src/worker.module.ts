import { Module } from '@nestjs/common';
import { PlatformIoModule, platformHealth } from '@app/common';
import { DbModule, PrismaService } from '@app/db';
import { ArchivesModule } from './archives/archives.module';
import { JobMetricsModule } from './jobs/job-metrics';
import { PurgeProcessor } from './purge/purge.processor';
import { PurgeService } from './purge/purge.service';

@Module({
  imports: [DbModule, PlatformIoModule.forRoot({ failFastOnRedisDown: false }), platformHealth(PrismaService), JobMetricsModule, ArchivesModule],
  providers: [PurgeService, PurgeProcessor],
})
export class WorkerModule {}
