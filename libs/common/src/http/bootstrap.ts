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
  http: HttpTimeouts;
}

/** The connection limits of a service (UHP_IDLE_TIMEOUT_MS, UHP_HEADERS_TIMEOUT_MS, UHP_KEEP_ALIVE_TIMEOUT_MS). */
export interface HttpTimeouts {
  idleMs: number;
  headersMs: number;
  keepAliveMs: number;
}

/**
 * Boots one service the way all three boot: JSON logs with request ids, the contract's error body,
 * metrics, idle limits instead of a total one for long uploads and downloads, bounded draining of bodies
 * nobody read, graceful shutdown on SIGTERM/SIGINT.
 */
export async function serve(options: ServeOptions): Promise<INestApplication> {
  const app = await NestFactory.create(options.module, {
    bodyParser: false,
    logger: new PinoNestLogger(options.logger),
    abortOnError: false,
  });
  const express = app.getHttpAdapter().getInstance() as {
    disable(setting: string): void;
    enable(setting: string): void;
  };
  // Nothing says what serves the API, and /V1/FILES is not /v1/files.
  express.disable('x-powered-by');
  express.enable('case sensitive routing');
  const observe = httpMetrics(options.registry);
  app.use(
    httpContextMiddleware(options.logger, {
      onFinish: (req, res, seconds) => observe(req.method ?? 'GET', res.statusCode, seconds),
      idleMs: options.http.idleMs,
      drain: options.drain,
    }),
  );
  app.useGlobalFilters(new ApiErrorFilter(options.logger, options.drain));
  options.configure?.(app);
  app.enableShutdownHooks();
  const server = app.getHttpServer() as Server;
  // Uploads and downloads of gigabytes outlast any total limit: bodies have an idle limit instead
  // (transfer-timeouts.ts). Headers must arrive in time; idle keep-alive connections close.
  server.requestTimeout = 0;
  server.headersTimeout = options.http.headersMs;
  server.keepAliveTimeout = options.http.keepAliveMs;
  // How often Node looks for connections past the headers timeout (30 s by default, whatever the timeout).
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    5_000,
    Math.max(250, Math.floor(options.http.headersMs / 4)),
  );
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
