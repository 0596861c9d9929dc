import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, APP_CONFIG, setDrainLimits, type GatewayConfig } from '@app/common';

export function maxRequestBytes(config: GatewayConfig): number {
  const inlineAsBase64 = 4 * Math.ceil(config.UHP_MAX_INLINE_FILE_BYTES / 3);
  return Math.max(config.UHP_MAX_REQUEST_BYTES, inlineAsBase64 + 64 * 1024);
}

const isJson = (type: string | undefined) => /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type ?? '');
const isMultipart = (type: string | undefined) => /^multipart\/form-data\s*(?:;|$)/i.test(type ?? '');

/**
 * Parses JSON bodies up to max_request_bytes (decided from Content-Length before reading when it is
 * known). Multipart bodies are left to the streaming upload path; any other non-empty body is 415.
 * Errors are thrown so the global filter answers them in the contract's shape.
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  private readonly parse: ReturnType<typeof express.json>;
  private readonly limit: number;

  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {
    this.limit = maxRequestBytes(config);
    this.parse = express.json({ limit: this.limit, strict: false, type: () => true });
  }

  use(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): Promise<void> | void {
    const type = req.headers['content-type'];
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody || isMultipart(type) || req.method === 'GET' || req.method === 'HEAD') return next();
    if (!isJson(type)) throw new ApiError('unsupported_media_type', 'Send a JSON body with Content-Type: application/json.');
    setDrainLimits(req, { maxBytes: 2 * this.limit, timeoutMs: this.config.UHP_DRAIN_TIMEOUT_MS });
    return new Promise<void>((resolve, reject) => {
      this.parse(req as express.Request, res as express.Response, (error?: unknown) => (error ? reject(error) : resolve()));
    }).then(() => next());
  }
}
