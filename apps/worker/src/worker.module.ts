import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { APP_CONFIG, HealthModule, PurgeProducer, READINESS_CHECKS, StorageClient, type ReadinessCheck, type WorkerConfig } from '@app/common';
import { QUEUE } from '@app/contracts';
import { DbModule, PrismaService } from '@app/db';
import { PurgeProcessor } from './purge/purge.processor';
import { PurgeService } from './purge/purge.service';

const storageClient = {
  provide: StorageClient,
  useFactory: (config: WorkerConfig) => new StorageClient({ baseUrl: config.STORAGE_URL, token: config.STORAGE_TOKEN }),
  inject: [APP_CONFIG],
};

const queues = [
  BullModule.forRootAsync({ useFactory: (config: WorkerConfig) => ({ connection: { url: config.REDIS_URL, maxRetriesPerRequest: null } }), inject: [APP_CONFIG] }),
  BullModule.registerQueue({ name: QUEUE.purge }),
];

@Module({ imports: [...queues], providers: [storageClient, PurgeProducer], exports: [storageClient, PurgeProducer, ...queues] })
class WorkerIoModule {}

@Module({
  imports: [
    DbModule,
    WorkerIoModule,
    HealthModule.forRoot(
      {
        provide: READINESS_CHECKS,
        useFactory: (prisma: PrismaService, storage: StorageClient, purges: PurgeProducer): ReadinessCheck[] => [
          { name: 'postgres', check: () => prisma.ping() },
          { name: 'redis', check: () => purges.ping() },
          { name: 'storage', check: () => storage.ping() },
        ],
        inject: [PrismaService, StorageClient, PurgeProducer],
      },
      [WorkerIoModule],
    ),
  ],
  providers: [PurgeService, PurgeProcessor],
})
export class WorkerModule {}
