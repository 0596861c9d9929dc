import { Module } from '@nestjs/common';
import { PlatformIoModule, platformHealth, READINESS_DETAILS } from '@app/common';
import { DatabaseHealth, DbModule } from '@app/db';
import { PreviewConverters } from './previews/preview-converters.provider';
import { PreviewsModule } from './previews/previews.module';
import { ArchivesModule } from './archives/archives.module';
import { JobMetricsModule } from './jobs/job-metrics';
import { PurgeProcessor } from './purge/purge.processor';
import { PurgeService } from './purge/purge.service';
import { SweepService } from './purge/sweep.service';

const converterReport = {
  provide: READINESS_DETAILS,
  useFactory: (converters: PreviewConverters) => () => ({
    previews: {
      enabled: converters.enabled,
      converters: converters.availability(),
      isolation: converters.isolation(),
    },
  }),
  inject: [PreviewConverters],
};

@Module({
  imports: [
    DbModule,
    PlatformIoModule.forRoot({ failFastOnRedisDown: false }),
    JobMetricsModule,
    PreviewsModule,
    ArchivesModule,
    platformHealth(DatabaseHealth, {
      details: [converterReport],
      checks: {
        inject: [PreviewConverters],
        build: (converters: PreviewConverters) => [
          { name: 'preview-converters', check: () => converters.checkedOnce() },
        ],
      },
    }),
  ],
  providers: [PurgeService, SweepService, PurgeProcessor],
})
export class WorkerModule {}
