import 'reflect-metadata';
import { Module } from '@nestjs/common';
import {
  AppConfigModule,
  createLogger,
  createMetricsRegistry,
  exitOnStartFailure,
  GracefulShutdownModule,
  httpTimeoutsOf,
  loadConfig,
  setHeapGrowingPercent,
  LoggingModule,
  MetricsModule,
  serve,
  workerConfigSchema,
} from '@app/common';
import { WorkerModule } from './worker.module';

/**
 * The worker serves only /healthz, /readyz and /metrics over HTTP; its work comes from the queues it
 * consumes (WORKER_QUEUES).
 */
async function main() {
  const bootLogger = createLogger('worker');
  try {
    const config = loadConfig(workerConfigSchema);
    setHeapGrowingPercent(config.UHP_HEAP_GROWING_PERCENT);
    const logger = createLogger('worker', config.LOG_LEVEL);
    const registry = createMetricsRegistry('worker');

    @Module({
      imports: [
        AppConfigModule.forRoot(workerConfigSchema, config),
        LoggingModule.forRoot(logger),
        GracefulShutdownModule,
        MetricsModule.forRoot(registry),
        WorkerModule.forRoles(config),
      ],
    })
    class WorkerAppModule {}

    await serve({
      module: WorkerAppModule,
      logger,
      registry,
      host: config.HOST,
      port: config.WORKER_PORT,
      http: httpTimeoutsOf(config),
      shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
      metricsPort: config.METRICS_PORT,
      drain: { maxBytes: 64 * 1024, timeoutMs: 1_000 },
    });
  } catch (error) {
    exitOnStartFailure(bootLogger)(error);
  }
}

void main();
