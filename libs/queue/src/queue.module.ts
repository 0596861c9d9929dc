import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { ConnectionOptions } from 'bullmq';
import { Cluster } from 'ioredis';
import {
  APP_CONFIG,
  LOGGER,
  describeRedisTopology,
  redisConnectionPlanOf,
  redisKeyPrefixOf,
  redisTopologyOf,
  type AppLogger,
  type RedisSettings,
} from '@app/common';
import { QUEUE_NAMES } from '@app/contracts';
import { JobBus } from './job-bus';

export interface QueueOptions {
  /** A request path must not wait for Redis (the gateway); a worker may queue commands until it is back. */
  failFastOnRedisDown: boolean;
}

const QUEUE_OPTIONS = Symbol('QUEUE_OPTIONS');

const isCluster = (connection: ConnectionOptions | Cluster): connection is Cluster => connection instanceof Cluster;

/**
 * The process's connection to Redis, whatever the topology. BullMQ opens and closes the connections it makes from
 * options; a Cluster client is shared by every queue of the process (its blocking consumers duplicate it) and is
 * closed here when the process stops.
 */
@Injectable()
export class RedisConnection implements OnApplicationShutdown {
  readonly connection: ConnectionOptions | Cluster;
  readonly prefix: string;

  constructor(
    @Inject(APP_CONFIG) config: RedisSettings,
    @Inject(QUEUE_OPTIONS) options: QueueOptions,
    @Inject(LOGGER) logger: AppLogger,
  ) {
    const plan = redisConnectionPlanOf(config, { failFast: options.failFastOnRedisDown });
    this.prefix = redisKeyPrefixOf(config);
    if (plan.mode === 'cluster') {
      const cluster = new Cluster(plan.nodes, plan.options);
      cluster.on('error', (error: Error) => logger.warn({ err: error }, 'Redis Cluster client error'));
      this.connection = cluster;
    } else this.connection = plan.options as ConnectionOptions; // ioredis' options, which BullMQ types loosely
    logger.info({ prefix: this.prefix }, `queues on ${describeRedisTopology(redisTopologyOf(config))}`);
  }

  async onApplicationShutdown(): Promise<void> {
    const connection = this.connection;
    if (isCluster(connection)) await connection.quit().catch(() => connection.disconnect());
  }
}

@Module({})
class RedisConnectionModule {
  static forRoot(options: QueueOptions): DynamicModule {
    return {
      module: RedisConnectionModule,
      providers: [{ provide: QUEUE_OPTIONS, useValue: options }, RedisConnection],
      exports: [RedisConnection],
    };
  }
}

/** The job queues (BullMQ on Redis) and the JobBus that feeds them, for the gateway and the worker. */
@Module({})
export class QueueModule {
  static forRoot(options: QueueOptions): DynamicModule {
    const redis = RedisConnectionModule.forRoot(options);
    const queues = [
      BullModule.forRootAsync({
        imports: [redis],
        useFactory: (redisConnection: RedisConnection) => ({
          prefix: redisConnection.prefix,
          connection: redisConnection.connection,
        }),
        inject: [RedisConnection],
      }),
      BullModule.registerQueue(...QUEUE_NAMES.map((name) => ({ name }))),
    ];
    return { module: QueueModule, global: true, imports: queues, providers: [JobBus], exports: [JobBus, ...queues] };
  }
}
