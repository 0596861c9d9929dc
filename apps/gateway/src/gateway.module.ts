import { BullModule } from '@nestjs/bullmq';
import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { APP_CONFIG, currentRequestId, PlatformIoModule, platformHealth, type GatewayConfig } from '@app/common';
import { QUEUE } from '@app/contracts';
import { DbModule, PrismaService } from '@app/db';
import { AgentRegistry } from './agents/agent-registry';
import { HttpAgent } from './agents/http.agent';
import { ReportAgent } from './agents/report.agent';
import { ArchiveProducer } from './archives/archive.producer';
import { ArchivesController } from './archives/archives.controller';
import { ArchivesService } from './archives/archives.service';
import { ApiKeyGuard, ApiKeyMiddleware, BootstrapKeys } from './auth/auth';
import { ArtifactWriter } from './containers/artifact-writer.service';
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
import { PreviewsService } from './previews/previews.service';
import { ResponseMetrics } from './responses/response-metrics';
import { ResponsesController } from './responses/responses.controller';
import { ResponsesService } from './responses/responses.service';
import { SessionsController } from './sessions/sessions.controller';
import { SessionsService } from './sessions/sessions.service';
import { MultipartUploadService } from './uploads/multipart-upload.service';
import { ObjectKeeper } from './uploads/object-keeper.service';
import { ObjectWriter } from './uploads/object-writer.service';

function agentRegistry(config: GatewayConfig): AgentRegistry {
  const publicBaseUrl = config.UHP_PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`;
  const callbackBaseUrl = (config.AGENT_CALLBACK_BASE_URL ?? publicBaseUrl).replace(/\/+$/, '');
  const http = new HttpAgent({ url: config.AGENT_HTTP_URL, token: config.AGENT_HTTP_TOKEN, callbackBaseUrl, requestId: currentRequestId });
  return new AgentRegistry([new ReportAgent(), http], config.AGENT_DEFAULT);
}

@Module({
  imports: [
    DbModule,
    PlatformIoModule.forRoot({ failFastOnRedisDown: true }),
    platformHealth(PrismaService),
    BullModule.registerQueue({ name: QUEUE.archive }),
  ],
  controllers: [LimitsController, OpenApiController, FilesController, SessionsController, ContainersController, PreviewsController, ResponsesController, ArchivesController],
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
    ObjectWriter,
    ArtifactWriter,
    ResponseMetrics,
    ResponsesService,
    PreviewsService,
    ArchiveProducer,
    ArchivesService,
    { provide: AgentRegistry, useFactory: agentRegistry, inject: [APP_CONFIG] },
  ],
})
export class GatewayModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ApiKeyMiddleware, JsonBodyMiddleware).forRoutes('*path');
  }
}
