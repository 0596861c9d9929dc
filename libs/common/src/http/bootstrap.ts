import type { INestApplication, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ApiErrorFilter } from '../errors/error.filter';
import type { DrainLimits } from '../errors/drain';
import { httpContextMiddleware } from '../logging/http-context.middleware';
import { PinoNestLogger } from '../logging/logger';
import { httpMetrics } from '../metrics/metrics';

export interface ServeOptions {
  module: Type<unknown>;
  logger: Logger;
  registry: Registry;
  host: string;
  port: number;
  drain: DrainLimits;
  /** Runs after the common middleware, before the routes (e.g. body parsers, static files). */
  configure?: (app: INestApplication) => void;
}

/**
 * Boots one service the way all three boot: JSON logs with request ids, the contract's error body,
 * metrics, no request timeout for long uploads and downloads, graceful shutdown on SIGTERM/SIGINT.
 */
export async function serve(options: ServeOptions): Promise<INestApplication> {
  const app = await NestFactory.create(options.module, {
    bodyParser: false,
    logger: new PinoNestLogger(options.logger),
    abortOnError: false,
  });
  const observe = httpMetrics(options.registry);
  app.use(
    httpContextMiddleware(options.logger, (req, res, seconds) => observe(req.method ?? 'GET', res.statusCode, seconds)),
  );
  app.useGlobalFilters(new ApiErrorFilter(options.logger, options.drain));
  options.configure?.(app);
  app.enableShutdownHooks();
  const server = app.getHttpServer() as Server;
  // Uploads and downloads of gigabytes outlast Node's default 5-minute request timeout.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 65_000;
  await app.listen(options.port, options.host);
  options.logger.info({ port: options.port, host: options.host }, 'listening');
  return app;
}

/** Logs a failed start (e.g. a bad configuration) as one clear line and exits non-zero. */
export function exitOnStartFailure(logger: Logger) {
  return (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    logger.fatal({ err: error }, `failed to start: ${message}`);
    process.stderr.write(`${message}\n`);
    process.exit(1);
  };
}
