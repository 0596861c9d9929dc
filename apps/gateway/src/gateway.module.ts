import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PlatformIoModule, platformHealth } from '@app/common';
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

@Module({
  imports: [
    DbModule,
    PlatformIoModule.forRoot({ failFastOnRedisDown: true }),
    platformHealth(PrismaService),
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
