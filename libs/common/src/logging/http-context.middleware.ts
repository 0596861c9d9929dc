import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { acceptRequestId, REQUEST_ID_HEADER, requestContext } from './request-context';

const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * First middleware of every service: adopts or makes the request id, answers it in X-Request-Id,
 * runs the rest of the request inside its log context, and writes one access-log line at the end.
 */
export function httpContextMiddleware(
  logger: Logger,
  onFinish?: (req: IncomingMessage, res: ServerResponse, seconds: number) => void,
) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const requestId = acceptRequestId(req.headers[REQUEST_ID_HEADER]);
    (req as IncomingMessage & { id?: string }).id = requestId;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      onFinish?.(req, res, seconds);
      const path = (req.url ?? '').split('?')[0];
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
