import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Gauge, type Registry } from 'prom-client';
import { APP_CONFIG, DependencyMonitor, METRICS_REGISTRY, serviceHealth, type StorageConfig } from '@app/common';
// By path, not the '@app/db' barrel: that one also loads the unit of work and with it the queue client.
import { DatabaseHealth, MultipartJournalModule, S3MultipartRepository } from '@app/db';
import {
  ComposeController,
  HashController,
  MultipartController,
  ObjectsController,
  ReadUrlsController,
} from './objects/objects.controller';
import { ObjectsService } from './objects/objects.service';
import { S3ObjectClient } from './objects/s3-object.client';
import { StorageTokenGuard } from './objects/storage-token.guard';

const s3Client = {
  provide: S3ObjectClient,
  useFactory: (config: StorageConfig, journal: S3MultipartRepository, dependencies: DependencyMonitor) => {
    const client = new S3ObjectClient(config, journal);
    dependencies.track(client.breaker);
    return client;
  },
  inject: [APP_CONFIG, S3MultipartRepository, DependencyMonitor],
};

/** How the part buffers of this process are used: bytes lent out, bytes held, uploads waiting for one. */
const partBufferMetrics = {
  provide: 'PART_BUFFER_METRICS',
  useFactory: (s3: S3ObjectClient, registry: Registry) => {
    const pool = s3.partBuffers;
    new Gauge({
      name: 'uhp_storage_part_buffer_bytes',
      help: 'Bytes of part buffers lent to uploads now (the budget is STORAGE_MEMORY_BUDGET_BYTES)',
      registers: [registry],
      collect() {
        this.set(pool.inUseBytes);
      },
    });
    new Gauge({
      name: 'uhp_storage_part_buffer_allocated_bytes',
      help: 'Bytes of part buffers this process holds, lent or free (free ones are let go after 60 s unused)',
      registers: [registry],
      collect() {
        this.set(pool.allocatedBytes);
      },
    });
    new Gauge({
      name: 'uhp_storage_uploads_waiting_for_memory',
      help: 'Uploads waiting for a part buffer',
      registers: [registry],
      collect() {
        this.set(pool.waitingCount);
      },
    });
    return true;
  },
  inject: [S3ObjectClient, METRICS_REGISTRY],
};

@Module({
  imports: [MultipartJournalModule],
  providers: [s3Client],
  exports: [s3Client, MultipartJournalModule],
})
class S3Module {}

@Module({
  imports: [
    S3Module,
    // Not S3: see ReadinessCheck. Its state is in /healthz.
    serviceHealth(DatabaseHealth, { imports: [S3Module] }),
  ],
  controllers: [ObjectsController, ComposeController, HashController, MultipartController, ReadUrlsController],
  providers: [ObjectsService, partBufferMetrics, { provide: APP_GUARD, useClass: StorageTokenGuard }],
})
export class StorageModule {}
