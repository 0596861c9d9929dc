import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module, type Provider, type Type } from '@nestjs/common';
import { APP_CONFIG, HealthModule, READINESS_CHECKS, StorageClient, type ReadinessCheck } from '@app/common';
import { QUEUE_NAMES } from '@app/contracts';
import { JobBus } from './job-bus';

export interface QueueConfig {
  REDIS_URL: string;
  REDIS_KEY_PREFIX: string;
  REDIS_PASSWORD?: string;
}

export interface QueueOptions {
  /** A request path must not wait for Redis (the gateway); a worker may queue commands until it is back. */
  failFastOnRedisDown: boolean;
}

/**
 * The ioredis options of every BullMQ connection of a process. A `rediss://` URL turns TLS on (ioredis), verified
 * against Node's trusted CAs, NODE_EXTRA_CA_CERTS included, and the URL's host (test/integration/tls proves it).
 */
export function redisConnectionOf(config: QueueConfig, options: QueueOptions) {
  return {
    url: config.REDIS_URL,
    // Used when the URL carries no password (ioredis lets the URL's own win).
    ...(config.REDIS_PASSWORD ? { password: config.REDIS_PASSWORD } : {}),
    maxRetriesPerRequest: null,
    ...(options.failFastOnRedisDown ? { enableOfflineQueue: false } : {}),
  };
}

/** The job queues (BullMQ on Redis) and the JobBus that feeds them, for the gateway and the worker. */
@Module({})
export class QueueModule {
  static forRoot(options: QueueOptions): DynamicModule {
    const queues = [
      BullModule.forRootAsync({
        useFactory: (config: QueueConfig) => ({
          prefix: config.REDIS_KEY_PREFIX,
          connection: redisConnectionOf(config, options),
        }),
        inject: [APP_CONFIG],
      }),
      BullModule.registerQueue(...QUEUE_NAMES.map((name) => ({ name }))),
    ];
    return { module: QueueModule, global: true, imports: queues, providers: [JobBus], exports: [JobBus, ...queues] };
  }
}

export interface ServiceHealthOptions {
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

/**
 * /healthz and /readyz of a service that talks to Postgres (`database`: its health check), the storage
 * service and Redis: the gateway and the worker.
 */
export function queueingServiceHealth(
  database: Type<{ ping(): Promise<void> }>,
  options: ServiceHealthOptions = {},
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
