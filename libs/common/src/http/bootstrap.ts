import {
  type CallHandler,
  type DynamicModule,
  type INestApplication,
  Module,
  type NestInterceptor,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { finalize, type Observable } from 'rxjs';
import type { z } from 'zod';
import { AppConfigModule } from '../config/config.module';
import { httpTimeoutsOf, type ServiceName, unsafeSettingsOf } from '../config/config.schema';
import { loadConfig } from '../config/load-config';
import { ApiError } from '../errors/api-error';
import { ApiErrorFilter } from '../errors/error.filter';
import type { DrainLimits } from '../errors/drain';
import { DependencyMonitorModule } from '../health/dependencies';
import { httpContextMiddleware } from '../logging/http-context.middleware';
import { createLogger, PinoNestLogger } from '../logging/logger';
import { LoggingModule } from '../logging/logging.module';
import { GracefulShutdown, GracefulShutdownModule } from '../lifecycle/graceful-shutdown';
import { setHeapGrowingPercent } from '../lifecycle/heap-growth';
import { createMetricsRegistry, httpMetrics, MetricsModule } from '../metrics/metrics';
import { answerClientError } from './client-error';

/** The part of configuration every service's schema holds (its HTTP server, runtime and logs). */
interface ServiceConfig {
  HOST: string;
  LOG_LEVEL: string;
  UHP_HEAP_GROWING_PERCENT: number;
  UHP_IDLE_TIMEOUT_MS: number;
  UHP_HEADERS_TIMEOUT_MS: number;
  UHP_KEEP_ALIVE_TIMEOUT_MS: number;
  SHUTDOWN_GRACE_MS: number;
  METRICS_PORT: number;
  UHP_ENV: 'development' | 'production';
  STORAGE_TOKEN: string;
  UHP_PUBLIC_BASE_URL?: string;
  UHP_API_METRICS?: boolean;
}

/** What is a service's own; everything else about starting it is the same in all three. */
export interface ServiceDefinition<S extends z.ZodType<ServiceConfig>> {
  name: ServiceName;
  schema: S;
  /** The service's own module, made for its configuration. */
  module: (config: z.infer<S>) => Type<unknown> | DynamicModule;
  port: (config: z.infer<S>) => number;
  /** Checks or completes the configuration before anything starts; throwing refuses the start. */
  prepare?: (config: z.infer<S>) => void;
  /** Also serve GET /metrics on the API port. */
  metricsOnApiPort?: (config: z.infer<S>) => boolean;
  /** How much of a body nobody read is drained, and for how long, before the connection is closed. */
  drain?: (config: z.infer<S>) => DrainLimits;
  configure?: ServeOptions['configure'];
}

/** A service that reads no large bodies drains little of one before it closes the connection. */
const SMALL_DRAIN: DrainLimits = { maxBytes: 64 * 1024, timeoutMs: 1_000 };

/**
 * Starts a service from its definition: configuration validated (a bad one exits with every fault listed),
 * logs, metrics, graceful shutdown, then serve(). The whole of a service's main.ts is one call to it.
 */
export function runService<S extends z.ZodType<ServiceConfig>>(definition: ServiceDefinition<S>): void {
  const bootLogger = createLogger(definition.name);
  void startService(definition).catch(exitOnStartFailure(bootLogger));
}

async function startService<S extends z.ZodType<ServiceConfig>>(definition: ServiceDefinition<S>): Promise<void> {
  const config: z.infer<S> = loadConfig(definition.schema);
  setHeapGrowingPercent(config.UHP_HEAP_GROWING_PERCENT);
  const logger = createLogger(definition.name, config.LOG_LEVEL);
  // Production refused these in loadConfig; development keeps each, said once at start.
  for (const { variable, message } of unsafeSettingsOf(definition.name, config))
    logger.warn({ variable }, `${variable} ${message} (kept in development; UHP_ENV=production refuses it)`);
  definition.prepare?.(config);
  const registry = createMetricsRegistry(definition.name);

  @Module({
    imports: [
      AppConfigModule.forRoot(definition.schema, config),
      LoggingModule.forRoot(logger),
      GracefulShutdownModule,
      MetricsModule.forRoot(registry, { onApiPort: definition.metricsOnApiPort?.(config) }),
      DependencyMonitorModule,
      definition.module(config),
    ],
  })
  class ServiceAppModule {}

  await serve({
    module: ServiceAppModule,
    logger,
    registry,
    host: config.HOST,
    port: definition.port(config),
    http: httpTimeoutsOf(config),
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
    metricsPort: config.METRICS_PORT,
    drain: definition.drain?.(config) ?? SMALL_DRAIN,
    configure: definition.configure,
  });
}

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
  /** How long requests and jobs in flight get on SIGTERM (SHUTDOWN_GRACE_MS). */
  shutdownGraceMs: number;
  /** A port of its own for GET /metrics (METRICS_PORT); 0 for none. */
  metricsPort: number;
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
  const server = app.getHttpServer() as Server;
  const inFlight = countRequests(app, () => app.get(GracefulShutdown).isDraining);
  const handlers = { count: 0 };
  app.useGlobalInterceptors(new HandlerCounter(handlers));
  // Uploads and downloads of gigabytes outlast any total limit: bodies have an idle limit instead
  // (transfer-timeouts.ts). Headers must arrive in time; idle keep-alive connections close.
  server.on('clientError', answerClientError);
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
  const metricsServer = options.metricsPort > 0 ? await serveMetrics(options) : null;
  const stop = (signal: string) =>
    void shutDown(app, { ...options, server, metricsServer, inFlight, handlers, signal });
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  return app;
}

/** The requests being served; while draining, answers tell keep-alive clients to reconnect elsewhere. */
interface InFlight {
  readonly count: number;
  /**
   * Answers every request not yet answered with the contract's 503 (the grace period is over); returns their
   * connections, to be closed once the answers are out (an answered request no longer holds its connection in
   * the server's list, and its client could go on sending a body nobody wants).
   */
  answerUnanswered(): Socket[];
}

function countRequests(app: INestApplication, isDraining: () => boolean): InFlight {
  const responses = new Set<ServerResponse>();
  app.use((_req: IncomingMessage, res: ServerResponse, next: () => void) => {
    responses.add(res);
    res.once('close', () => responses.delete(res));
    if (isDraining()) res.setHeader('connection', 'close');
    next();
  });
  return {
    get count() {
      return responses.size;
    },
    answerUnanswered() {
      const answered: Socket[] = [];
      const error = new ApiError('service_unavailable', 'The service stopped before this request was done; try again.');
      const body = JSON.stringify(error.toBody());
      for (const res of responses) {
        if (res.headersSent || !res.socket) continue;
        answered.push(res.socket);
        // Written whole but not ended: an ended answer would have Node discard the rest of the request body
        // unseen, and the handler would wait for it; closing the connection ends the request as a cut one,
        // so the handler cleans up as for a client gone (an upload discards what it staged).
        res.writeHead(error.status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'retry-after': '1',
          connection: 'close',
        });
        res.write(body);
      }
      return answered;
    },
  };
}

/**
 * After the grace period, how long the 503s written to requests still in flight get to leave before their
 * connections close (a client still sending its body may miss an answer that is cut off with it).
 */
const LAST_ANSWERS_MS = 250;

/**
 * Counts handlers still running. A request whose connection was closed may still be cleaning up (an
 * upload discarding what it staged): the process waits for that before it closes the database.
 */
class HandlerCounter implements NestInterceptor {
  constructor(private readonly counter: { count: number }) {}

  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    this.counter.count += 1;
    return next.handle().pipe(finalize(() => (this.counter.count -= 1)));
  }
}

/** How long handlers cut at the end of the grace period get to clean up before the modules close. */
const WIND_DOWN_MS = 5_000;

/** GET /metrics on a port of its own, for a scraper that must not share the public API port. */
async function serveMetrics(options: ServeOptions): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    options.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.metricsPort, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  options.logger.info({ port: options.metricsPort }, 'metrics listening');
  return server;
}

/**
 * The graceful stop, the same in every service: readiness fails at once and no new connection is
 * taken; requests in flight and the registered drain steps (the workers' jobs) get the grace period;
 * connections still open then are closed; only after that does Nest close the modules — the database,
 * Redis and converters last. A second signal stops at once.
 */
async function shutDown(
  app: INestApplication,
  context: ServeOptions & {
    server: Server;
    metricsServer: Server | null;
    inFlight: InFlight;
    handlers: { count: number };
    signal: string;
  },
): Promise<void> {
  const { logger, server, inFlight, handlers, shutdownGraceMs } = context;
  process.once(context.signal, () => process.exit(1));
  const lifecycle = app.get(GracefulShutdown);
  lifecycle.markDraining();
  logger.info({ signal: context.signal, inFlight: inFlight.count, graceMs: shutdownGraceMs }, 'draining');
  server.close();
  server.closeIdleConnections();
  const grace = AbortSignal.timeout(shutdownGraceMs);
  const requestsDone = (async () => {
    while (inFlight.count > 0 && !grace.aborted) await sleep(50);
  })();
  await Promise.all([requestsDone, lifecycle.drain(grace)]);
  if (inFlight.count > 0) {
    // A request whose answer has not begun gets the contract's 503 (retry elsewhere); one whose answer is
    // streaming can only be cut, which its client sees as a body short of its length.
    const answered = inFlight.answerUnanswered();
    logger.warn(
      { inFlight: inFlight.count, answered: answered.length },
      'grace period over; closing the connections still open',
    );
    if (answered.length > 0) await sleep(LAST_ANSWERS_MS);
    for (const socket of answered) socket.destroy();
  }
  server.closeAllConnections();
  const windDown = Date.now() + WIND_DOWN_MS;
  while (handlers.count > 0 && Date.now() < windDown) await sleep(50);
  context.metricsServer?.close();
  try {
    await app.close();
    logger.info('stopped');
  } catch (error) {
    logger.error({ err: error }, 'error while closing');
  }
  process.exit(0);
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
