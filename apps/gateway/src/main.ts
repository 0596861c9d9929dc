import 'reflect-metadata';
import express from 'express';
// Only the path helper: the package's index also loads the whole browser bundle, which the gateway never runs
// (it serves those files from disk) and would keep in memory for nothing.
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path.js';
import { gatewayConfigSchema, runService } from '@app/common';
import { parseBootstrapKeys } from './auth/api-key';
import { GatewayModule } from './gateway.module';
import { effectiveLimitsOf } from './limits/effective-limits';

runService({
  name: 'gateway',
  schema: gatewayConfigSchema,
  module: () => GatewayModule,
  port: (config) => config.PORT,
  prepare: (config) => {
    parseBootstrapKeys(config.UHP_API_KEYS);
    if (!config.UHP_PUBLIC_BASE_URL) config.UHP_PUBLIC_BASE_URL = `http://127.0.0.1:${config.PORT}`;
  },
  metricsOnApiPort: (config) => config.UHP_API_METRICS,
  drain: (config) => ({
    maxBytes: 2 * effectiveLimitsOf(config).maxRequestBytes,
    timeoutMs: config.UHP_DRAIN_TIMEOUT_MS,
  }),
  configure: (app) => {
    app.use('/docs/assets', express.static(getAbsoluteFSPath(), { index: false, maxAge: '1h' }));
  },
});
