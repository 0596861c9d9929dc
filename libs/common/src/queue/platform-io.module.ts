import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module, type Provider, type Type } from '@nestjs/common';
import { QUEUE_NAMES } from '@app/contracts';
import { APP_CONFIG } from '../config/config.module';
import { HealthModule, READINESS_CHECKS, type ReadinessCheck } from '../health/health';
import { LOGGER, type AppLogger } from '../logging/logging.module';
import { ObjectStore } from '../storage/object-store';
import { PresignedUrlReader } from '../storage/presigned-url-reader';
import { StorageClient } from '../storage/storage.client';
import { JobBus } from './job-bus';

export interface PlatformConfig {
  REDIS_URL: string;
  REDIS_KEY_PREFIX: string;
  REDIS_PASSWORD?: string;
  STORAGE_URL: string;
  STORAGE_TOKEN: string;
  /** Reads straight from S3 through URLs the storage service signs (on by default in the gateway only). */
  STORAGE_DIRECT_READS?: boolean;
  UHP_IDLE_TIMEOUT_MS: number;
}

/** The storage service's client as a service's configuration asks for it: reads relayed, or straight from S3. */
export function storageClientOf(config: PlatformConfig, logger: AppLogger): StorageClient {
  return new StorageClient({
    baseUrl: config.STORAGE_URL,
    token: config.STORAGE_TOKEN,
    directReads: config.STORAGE_DIRECT_READS
      ? new PresignedUrlReader({
          idleTimeoutMs: config.UHP_IDLE_TIMEOUT_MS,
          onFailure: (failure) => logger.error(failure, 'S3 read through a signed URL failed'),
        })
      : undefined,
  });
}

/**
 * What the gateway and the worker both reach: the object store (the storage service), the job bus
 * (Redis) and Postgres,
 * with /healthz and /readyz over all three. `failFastOnRedisDown`: a request path must not wait for
 * Redis (the gateway); a worker may queue commands until it is back.
 */
@Module({})
export class PlatformIoModule {
  static forRoot(options: { failFastOnRedisDown: boolean }): DynamicModule {
    const storageClient = { provide: StorageClient, useFactory: storageClientOf, inject: [APP_CONFIG, LOGGER] };
    const objectStore = { provide: ObjectStore, useExisting: StorageClient };
    const queues = [
      BullModule.forRootAsync({
        useFactory: (config: PlatformConfig) => ({
          prefix: config.REDIS_KEY_PREFIX,
          connection: {
            url: config.REDIS_URL,
            // Used when the URL carries no password (ioredis lets the URL's own win).
            ...(config.REDIS_PASSWORD ? { password: config.REDIS_PASSWORD } : {}),
            maxRetriesPerRequest: null,
            ...(options.failFastOnRedisDown ? { enableOfflineQueue: false } : {}),
          },
        }),
        inject: [APP_CONFIG],
      }),
      BullModule.registerQueue(...QUEUE_NAMES.map((name) => ({ name }))),
    ];
    return {
      module: PlatformIoModule,
      global: true,
      imports: queues,
      providers: [storageClient, objectStore, JobBus],
      exports: [storageClient, objectStore, JobBus, ...queues],
    };
  }
}

export interface PlatformHealthOptions {
  /**
   * Whether Redis is needed to serve (the worker's queues are; a gateway's uploads and downloads are not:
   * a Redis blip must not take every gateway out of rotation — what could not be queued is queued again by
   * the worker's sweep, or answered 503 on its own route).
   */
  needsRedis?: boolean;
  /** Providers of READINESS_DETAILS: what /readyz reports besides. */
  details?: Provider[];
  /** Further checks of the service's own (built from the injected dependencies). */
  checks?: { inject: Array<Type | symbol | string>; build(...dependencies: unknown[]): ReadinessCheck[] };
}

/** Readiness of a service that talks to Postgres (`database`: its health check), the storage service and Redis. */
export function platformHealth(
  database: Type<{ ping(): Promise<void> }>,
  options: PlatformHealthOptions = {},
): DynamicModule {
  const own = options.checks ?? { inject: [], build: () => [] };
  return HealthModule.forRoot(
    {
      provide: READINESS_CHECKS,
      useFactory: (
        db: { ping(): Promise<void> },
        storage: StorageClient,
        jobs: JobBus,
        ...dependencies: unknown[]
      ): ReadinessCheck[] => [
        { name: 'postgres', check: () => db.ping() },
        ...(options.needsRedis === false ? [] : [{ name: 'redis', check: () => jobs.ping() }]),
        { name: 'storage', check: () => storage.ping() },
        ...own.build(...dependencies),
      ],
      inject: [database, StorageClient, JobBus, ...own.inject],
    },
    [],
    options.details ?? [],
  );
}
