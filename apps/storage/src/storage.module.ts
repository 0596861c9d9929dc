import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { APP_CONFIG, HealthModule, READINESS_CHECKS, type ReadinessCheck, type StorageConfig } from '@app/common';
import { ObjectsController } from './objects/objects.controller';
import { ObjectsService } from './objects/objects.service';
import { S3ObjectClient } from './objects/s3-object.client';
import { StorageTokenGuard } from './objects/storage-token.guard';

const s3Client = {
  provide: S3ObjectClient,
  useFactory: (config: StorageConfig) => new S3ObjectClient(config),
  inject: [APP_CONFIG],
};

@Module({
  providers: [s3Client],
  exports: [s3Client],
})
class S3Module {}

@Module({
  imports: [
    S3Module,
    HealthModule.forRoot(
      {
        provide: READINESS_CHECKS,
        useFactory: (s3: S3ObjectClient): ReadinessCheck[] => [{ name: 's3', check: () => s3.ping() }],
        inject: [S3ObjectClient],
      },
      [S3Module],
    ),
  ],
  controllers: [ObjectsController],
  providers: [ObjectsService, { provide: APP_GUARD, useClass: StorageTokenGuard }],
})
export class StorageModule {}
