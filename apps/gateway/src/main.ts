import 'reflect-metadata';
import { Module } from '@nestjs/common';
import express from 'express';
// Only the path helper: the package's index also loads the 1.7 MB browser bundle (~40 MB of RSS).
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path.js';
import {
  AppConfigModule,
  createLogger,
  createMetricsRegistry,
  DEV_STORAGE_TOKEN,
  exitOnStartFailure,
  GracefulShutdownModule,
  httpTimeoutsOf,
  gatewayConfigSchema,
  loadConfig,
  setHeapGrowingPercent,
  LoggingModule,
  MetricsModule,
  serve,
} from '@app/common';
import { parseBootstrapKeys } from './auth/api-key';
import { maxRequestBytes } from './http/json-body.middleware';
import { GatewayModule } from './gateway.module';

async function main() {
  const bootLogger = createLogger('gateway');
  try {
    const config = loadConfig(gatewayConfigSchema);
    setHeapGrowingPercent(config.UHP_HEAP_GROWING_PERCENT);
    parseBootstrapKeys(config.UHP_API_KEYS);
    if (!config.UHP_PUBLIC_BASE_URL) config.UHP_PUBLIC_BASE_URL = `http://127.0.0.1:${config.PORT}`;
    const logger = createLogger('gateway', config.LOG_LEVEL);
    if (config.STORAGE_TOKEN === DEV_STORAGE_TOKEN)
      logger.warn('STORAGE_TOKEN is the development default; set a secret one outside a laptop');
    const registry = createMetricsRegistry('gateway');

    @Module({
      imports: [
        AppConfigModule.forRoot(gatewayConfigSchema, config),
        LoggingModule.forRoot(logger),
        GracefulShutdownModule,
        MetricsModule.forRoot(registry, { onApiPort: config.UHP_API_METRICS }),
        GatewayModule,
      ],
    })
    class GatewayAppModule {}

    await serve({
      module: GatewayAppModule,
      logger,
      registry,
      host: config.HOST,
      port: config.PORT,
      http: httpTimeoutsOf(config),
      shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
      metricsPort: config.METRICS_PORT,
      drain: { maxBytes: 2 * maxRequestBytes(config), timeoutMs: config.UHP_DRAIN_TIMEOUT_MS },
      configure: (app) => {
        app.use('/docs/assets', express.static(getAbsoluteFSPath(), { index: false, maxAge: '1h' }));
      },
    });
  } catch (error) {
    exitOnStartFailure(bootLogger)(error);
  }
}

void main();
