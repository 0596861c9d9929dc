import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { type DrainLimits, drainRequest } from '../errors/drain';
import { watchRequestBody } from '../http/transfer-timeouts';
import { acceptRequestId, REQUEST_ID_HEADER, requestContext } from './request-context';

export interface HttpContextOptions {
  onFinish?: (req: IncomingMessage, res: ServerResponse, seconds: number) => void;
  /** No byte of the request body for this long: the connection is closed. */
  idleMs: number;
  /** What is read and discarded of a body no handler read, once the answer is out. */
  drain: DrainLimits;
}

const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * First middleware of every service: adopts or makes the request id, answers it in X-Request-Id,
 * runs the rest of the request inside its log context, and writes one access-log line at the end. It
 * also watches the request body for idleness, and once the answer is out, drains what no handler read
 * within the drain budget (Node would otherwise read any amount of it before the next request).
 */
export function httpContextMiddleware(logger: Logger, options: HttpContextOptions) {
  const { onFinish } = options;
  return (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const requestId = acceptRequestId(req.headers[REQUEST_ID_HEADER]);
    (req as IncomingMessage & { id?: string }).id = requestId;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    const started = process.hrtime.bigint();
    watchRequestBody(req, { idleMs: options.idleMs, logger: logger.child({ requestId }) });
    res.once('finish', () => drainRequest(req, options.drain));
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      onFinish?.(req, res, seconds);
      // originalUrl: middleware mounted on a path (Nest's) sees req.url cut to what follows the mount.
      const path = ((req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '').split('?')[0];
      const line = {
        requestId,
        method: req.method,
        path: path.length > 200 ? `${path.slice(0, 200)}…` : path,
        status: res.statusCode,
        ms: Math.round(seconds * 1000),
        aborted: !res.writableFinished,
      };
      if (res.statusCode >= 500) logger.warn(line, 'request failed');
      else if (PROBES.has(path)) logger.debug(line, 'probe');
      else logger.info(line, 'request');
    });
    requestContext.run({ requestId }, next);
  };
}
