import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import cors, { type CorsOptions } from 'cors';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { APP_CONFIG, type CorsOrigins, type GatewayConfig } from '@app/common';

/** Every method a /v1 route answers. */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'];

/** What a page may send besides the CORS-safelisted headers: the key, bodies, ranges, tus's own, a request id. */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Range',
  'If-None-Match',
  'If-Range',
  'X-Request-Id',
  'Tus-Resumable',
  'Upload-Length',
  'Upload-Metadata',
  'Upload-Offset',
  'Upload-Checksum',
  'Upload-Defer-Length',
  'Upload-Concat',
  'X-HTTP-Method-Override',
  'X-Requested-With',
];

/**
 * What a page may read besides the CORS-safelisted headers: where a tus upload lives and how far it got, the id of
 * the file it became (x-file-id), a download's name, validator and range, the request id to quote, and when and
 * whether to retry.
 */
export const CORS_EXPOSED_HEADERS = [
  'Location',
  'Tus-Resumable',
  'Tus-Version',
  'Tus-Extension',
  'Tus-Max-Size',
  'Tus-Checksum-Algorithm',
  'Upload-Offset',
  'Upload-Length',
  'Upload-Metadata',
  'Upload-Expires',
  'x-file-id',
  'Content-Disposition',
  'Content-Range',
  'Accept-Ranges',
  'ETag',
  'X-Request-Id',
  'Retry-After',
  'x-should-retry',
];

/** A browser may keep a preflight's answer this long (Chromium caps it at two hours). */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/**
 * The CORS policy of the public API (UHP_CORS_ORIGINS). Never Access-Control-Allow-Credentials: a key is a bearer
 * token the page sends itself, so no cookie or client certificate ever needs to cross origins. A list of origins
 * answers with the request's own origin when it is listed (none otherwise) and `Vary: Origin`, so a cache never
 * serves one origin's answer to another.
 */
export function corsOptionsOf(origins: CorsOrigins): CorsOptions {
  return {
    origin: origins,
    methods: CORS_METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    credentials: false,
    // Every OPTIONS under /v1 is answered here, before the key check: a preflight never carries the key.
    preflightContinue: false,
    optionsSuccessStatus: 204,
  };
}

/**
 * Runs before the key check on every /v1 path, so that answers a browser must read — a 401, a 429 with
 * Retry-After — carry the CORS headers too, and answers every OPTIONS (a preflight, or tus's discovery request,
 * whose Tus-* headers TusDiscoveryMiddleware has set by then) with 204.
 */
@Injectable()
export class CorsMiddleware implements NestMiddleware {
  private readonly handle: ReturnType<typeof cors>;

  constructor(@Inject(APP_CONFIG) config: GatewayConfig) {
    this.handle = cors(corsOptionsOf(config.UHP_CORS_ORIGINS));
  }

  use(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void {
    this.handle(req, res, next);
  }
}
