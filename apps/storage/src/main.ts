import 'reflect-metadata';
import { Module } from '@nestjs/common';
import {
  AppConfigModule,
  createLogger,
  createMetricsRegistry,
  DEV_STORAGE_TOKEN,
  exitOnStartFailure,
  GracefulShutdownModule,
  httpTimeoutsOf,
  loadConfig,
  setHeapGrowingPercent,
  LoggingModule,
  MetricsModule,
  serve,
  storageConfigSchema,
} from '@app/common';
import { StorageModule } from './storage.module';

async function main() {
  const bootLogger = createLogger('storage');
  try {
    const config = loadConfig(storageConfigSchema);
    setHeapGrowingPercent(config.UHP_HEAP_GROWING_PERCENT);
    const logger = createLogger('storage', config.LOG_LEVEL);
    if (config.STORAGE_TOKEN === DEV_STORAGE_TOKEN)
      logger.warn('STORAGE_TOKEN is the development default; set a secret one outside a laptop');
    const registry = createMetricsRegistry('storage');

    @Module({
      imports: [
        AppConfigModule.forRoot(storageConfigSchema, config),
        LoggingModule.forRoot(logger),
        GracefulShutdownModule,
        MetricsModule.forRoot(registry),
        StorageModule,
      ],
    })
    class StorageAppModule {}

    await serve({
      module: StorageAppModule,
      logger,
      registry,
      host: config.HOST,
      port: config.STORAGE_PORT,
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
