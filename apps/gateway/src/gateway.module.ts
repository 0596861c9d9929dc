import { BullModule } from '@nestjs/bullmq';
import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { APP_CONFIG, HealthModule, PurgeProducer, READINESS_CHECKS, StorageClient, type GatewayConfig, type ReadinessCheck } from '@app/common';
import { QUEUE } from '@app/contracts';
import { DbModule, PrismaService } from '@app/db';
import { ApiKeyGuard, ApiKeyMiddleware, BootstrapKeys } from './auth/auth';
import { ContainerFilesService } from './containers/container-files.service';
import { ContainersController } from './containers/containers.controller';
import { ContainersService } from './containers/containers.service';
import { FileCopier } from './containers/file-copier.service';
import { DownloadService } from './downloads/download.service';
import { FilesController } from './files/files.controller';
import { FilesService } from './files/files.service';
import { JsonBodyMiddleware } from './http/json-body.middleware';
import { LimitsController } from './limits/limits.controller';
import { OpenApiController } from './openapi/openapi.controller';
import { PreviewsController } from './previews/previews.controller';
import { SessionsController } from './sessions/sessions.controller';
import { SessionsService } from './sessions/sessions.service';
import { MultipartUploadService } from './uploads/multipart-upload.service';
import { ObjectKeeper } from './uploads/object-keeper.service';

const storageClient = {
  provide: StorageClient,
  useFactory: (config: GatewayConfig) => new StorageClient({ baseUrl: config.STORAGE_URL, token: config.STORAGE_TOKEN }),
  inject: [APP_CONFIG],
};

const queues = [
  BullModule.forRootAsync({ useFactory: (config: GatewayConfig) => ({ connection: { url: config.REDIS_URL, maxRetriesPerRequest: null, enableOfflineQueue: false } }), inject: [APP_CONFIG] }),
  BullModule.registerQueue({ name: QUEUE.purge }),
];

@Module({
  imports: [...queues],
  providers: [storageClient, PurgeProducer],
  exports: [storageClient, PurgeProducer, ...queues],
})
class GatewayIoModule {}

@Module({
  imports: [
    DbModule,
    GatewayIoModule,
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
      [GatewayIoModule],
    ),
  ],
  controllers: [LimitsController, OpenApiController, FilesController, SessionsController, ContainersController, PreviewsController],
  providers: [
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    BootstrapKeys,
    DownloadService,
    MultipartUploadService,
    ObjectKeeper,
    FilesService,
    SessionsService,
    ContainersService,
    ContainerFilesService,
    FileCopier,
  ],
})
export class GatewayModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ApiKeyMiddleware, JsonBodyMiddleware).forRoutes('*path');
  }
}
