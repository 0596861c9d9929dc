import { Inject, type MiddlewareConsumer, Module, type NestModule, type Type } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { ObjectStoreModule, serviceHealth } from '@app/common';
import { DatabaseHealth, DbModule } from '@app/db';
import { LifecycleModule } from '@app/lifecycle';
import { QueueModule } from '@app/queue';
import { ArchivesModule } from './archives/archives.module';
import { ApiKeyMiddleware } from './auth/auth';
import { AuthModule } from './auth/auth.module';
import { ContainersModule } from './containers/containers.module';
import { FilesModule } from './files/files.module';
import { CorsMiddleware } from './http/cors.middleware';
import { HttpModule } from './http/http.module';
import { jsonBodyRoutes } from './http/json-body.decorator';
import { JsonBodyMiddleware } from './http/json-body.middleware';
import { LimitsModule } from './limits/limits.module';
import { OpenApiModule } from './openapi/openapi.module';
import { PreviewsModule } from './previews/previews.module';
import { ResponsesModule } from './responses/responses.module';
import { SessionsModule } from './sessions/sessions.module';
import { TusDiscoveryMiddleware, TusHeadersMiddleware } from './tus/tus.middleware';
import { TusModule } from './tus/tus.module';
import { PartArrivalMiddleware } from './uploads/openai/part-arrival';
import { UploadsModule } from './uploads/openai/uploads.module';

/** The public API: a module per feature on top of the platform (Postgres, the job bus, the object store). */
@Module({
  imports: [
    DiscoveryModule,
    DbModule,
    ObjectStoreModule.forRoot(),
    QueueModule.forRoot({ failFastOnRedisDown: true }),
    LifecycleModule,
    serviceHealth(DatabaseHealth),
    HttpModule,
    AuthModule,
    FilesModule,
    UploadsModule,
    TusModule,
    SessionsModule,
    ContainersModule,
    ResponsesModule,
    PreviewsModule,
    ArchivesModule,
    LimitsModule,
    OpenApiModule,
  ],
})
export class GatewayModule implements NestModule {
  constructor(@Inject(DiscoveryService) private readonly discovery: DiscoveryService) {}

  /**
   * The key is checked on every path, known or not, before anything else. JSON bodies are read only on
   * the routes that take one (marked `@JsonBody()`); any other body is never parsed, and what is left of it
   * once the answer is out is drained within the drain budget.
   */
  configure(consumer: MiddlewareConsumer): void {
    // Before the key check: tus's discovery headers and CORS answer OPTIONS (a preflight carries no key), a browser
    // reads a 401 only with CORS headers, and a part's place in line is its arrival.
    consumer.apply(TusDiscoveryMiddleware).forRoutes('v1/tus', 'v1/tus/*path');
    consumer.apply(CorsMiddleware).forRoutes('v1', 'v1/*path');
    consumer.apply(PartArrivalMiddleware).forRoutes('v1/uploads/*path');
    consumer.apply(ApiKeyMiddleware).forRoutes('*path');
    consumer.apply(TusHeadersMiddleware).forRoutes('v1/tus', 'v1/tus/*path');
    const controllers = this.discovery.getControllers().map((wrapper) => wrapper.metatype as Type);
    consumer.apply(JsonBodyMiddleware).forRoutes(...jsonBodyRoutes(controllers));
  }
}
