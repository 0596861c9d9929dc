import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_CONFIG } from '@app/common';
import { QUEUE_NAMES } from '@app/contracts';
import { JobBus } from './job-bus';

export interface QueueConfig {
  REDIS_URL: string;
  REDIS_KEY_PREFIX: string;
  REDIS_PASSWORD?: string;
  REDIS_COMMAND_TIMEOUT_MS: number;
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
