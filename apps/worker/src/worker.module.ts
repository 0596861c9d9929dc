import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { ObjectStoreModule, READINESS_DETAILS, serviceHealth, type WorkerConfig } from '@app/common';
import { DatabaseHealth, DbModule } from '@app/db';
import { LifecycleModule } from '@app/lifecycle';
import { QueueModule } from '@app/queue';
import { ArchivesModule } from './archives/archives.module';
import { JobMetricsModule } from './jobs/job-metrics';
import { QueueProcessorModule } from './jobs/queue-processor';
import { PreviewConverters } from './previews/preview-converters.provider';
import { PreviewsModule } from './previews/previews.module';
import { PurgeModule } from './purge/purge.module';

/**
 * A worker process consumes the queues its WORKER_QUEUES names (preview, archive, purge; all by default),
 * so each pool scales on its own. Whatever it consumes, it reports the depth of every queue.
 */
@Module({})
export class WorkerModule {
  static forRoles(config: Pick<WorkerConfig, 'WORKER_QUEUES' | 'PREVIEW_ENABLED'>): DynamicModule {
    const queues = new Set(config.WORKER_QUEUES);
    const previews = queues.has('preview') && config.PREVIEW_ENABLED;
    const details: Provider = previews
      ? {
          provide: READINESS_DETAILS,
          useFactory: (converters: PreviewConverters) => () => ({
            queues: [...queues],
            previews: { enabled: true, converters: converters.availability(), isolation: converters.isolation() },
          }),
          inject: [PreviewConverters],
        }
      : { provide: READINESS_DETAILS, useValue: () => ({ queues: [...queues], previews: { enabled: false } }) };
    return {
      module: WorkerModule,
      imports: [
        DbModule,
        ObjectStoreModule.forRoot(),
        QueueModule.forRoot({ failFastOnRedisDown: false }),
        LifecycleModule,
        JobMetricsModule,
        QueueProcessorModule,
        ...(previews ? [PreviewsModule] : []),
        ...(queues.has('archive') ? [ArchivesModule] : []),
        ...(queues.has('purge') ? [PurgeModule] : []),
        serviceHealth(DatabaseHealth, {
          details: [details],
          // Ready once the first check of the converters is recorded, so gateways know what previews.
          ...(previews
            ? {
                checks: {
                  inject: [PreviewConverters],
                  build: (converters: PreviewConverters) => [
                    { name: 'preview-converters', check: () => converters.checkedOnce() },
                  ],
                },
              }
            : {}),
        }),
      ],
    };
  }
}
