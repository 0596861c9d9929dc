import { type DynamicModule, Module } from '@nestjs/common';
import { APP_CONFIG } from '../config/config.module';
import { DependencyMonitor } from '../health/dependencies';
import { LOGGER, type AppLogger } from '../logging/logging.module';
import { ObjectStore } from './object-store';
import { PresignedUrlReader } from './presigned-url-reader';
import { StorageClient } from './storage.client';

/** What a service needs to reach the storage service. */
export interface StorageClientConfig {
  STORAGE_URL: string;
  STORAGE_TOKEN: string;
  /** Reads straight from S3 through URLs the storage service signs (on by default in the gateway only). */
  STORAGE_DIRECT_READS?: boolean;
  UHP_IDLE_TIMEOUT_MS: number;
  STORAGE_REQUEST_TIMEOUT_MS: number;
  S3_REQUEST_TIMEOUT_MS: number;
}

/**
 * The storage service's client as a service's configuration asks for it: reads relayed, or straight from S3.
 * Its breakers (the storage service's, and S3's for direct reads) are followed by `dependencies` when given.
 */
export function storageClientOf(
  config: StorageClientConfig,
  logger: AppLogger,
  dependencies?: DependencyMonitor,
): StorageClient {
  const client = new StorageClient({
    baseUrl: config.STORAGE_URL,
    token: config.STORAGE_TOKEN,
    idleMs: config.UHP_IDLE_TIMEOUT_MS,
    requestTimeoutMs: config.STORAGE_REQUEST_TIMEOUT_MS,
    directReads: config.STORAGE_DIRECT_READS
      ? new PresignedUrlReader({
          idleTimeoutMs: config.S3_REQUEST_TIMEOUT_MS,
          onFailure: (failure) => logger.error(failure, 'S3 read through a signed URL failed'),
        })
      : undefined,
  });
  dependencies?.track(client.breaker);
  if (client.directReads) dependencies?.track(client.directReads.breaker);
  return client;
}

/** The object store (the storage service, through its client) for the gateway and the worker. */
@Module({})
export class ObjectStoreModule {
  static forRoot(): DynamicModule {
    const storageClient = {
      provide: StorageClient,
      useFactory: storageClientOf,
      inject: [APP_CONFIG, LOGGER, DependencyMonitor],
    };
    const objectStore = { provide: ObjectStore, useExisting: StorageClient };
    return {
      module: ObjectStoreModule,
      global: true,
      providers: [storageClient, objectStore],
      exports: [storageClient, objectStore],
    };
  }
}
