import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ApiError, ClientGoneError, NO_RETRY_HEADERS } from './api-error';
import { isDependencyUnavailable } from './dependency-errors';
import { type DrainLimits, drainRequest } from './drain';

/** Turns anything thrown while serving a request into the contract's error body (docs/api.md §1). */
export function toApiError(exception: unknown): ApiError {
  if (exception instanceof ApiError) return exception;
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status === 404) return new ApiError('not_found', 'No such route.');
    if (status === 405) return new ApiError('not_found', 'No such route.');
    if (status === 413) return new ApiError('request_too_large', 'The request body is too large.');
    if (status === 415) return new ApiError('unsupported_media_type', 'Unsupported media type.');
    if (status >= 400 && status < 500) return new ApiError('invalid_request', exception.message);
  }
  if (isDependencyUnavailable(exception))
    return new ApiError('service_unavailable', 'A service this request needs is unavailable; try again.');
  return new ApiError('internal_error', 'The server failed to handle this request.');
}

function isClientGone(exception: unknown): boolean {
  if (exception instanceof ClientGoneError) return true;
  const code = (exception as { code?: string } | null)?.code;
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE';
}

@Catch()
export class ApiErrorFilter implements ExceptionFilter {
  constructor(
    private readonly logger: Logger,
    private readonly drain: DrainLimits,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<IncomingMessage>();
    const res = http.getResponse<ServerResponse>();
    if (isClientGone(exception) && (exception instanceof ClientGoneError || req.destroyed || req.socket?.destroyed))
      return;
    const error = toApiError(exception);
    if (error.code === 'internal_error' && error !== exception) {
      this.logger.error({ err: exception }, 'unhandled error');
    } else if (error.status >= 500) {
      const cause = error === exception ? undefined : (exception as Error)?.message?.slice(-300);
      this.logger.warn({ code: error.code, message: error.message, cause }, 'request failed');
    }
    if (res.headersSent) {
      // Never write after the headers: the client sees a cut-off body and must retry.
      this.logger.warn({ code: error.code }, 'error after the response started; closing the connection');
      res.destroy();
      return;
    }
    const headers: Record<string, string> = { ...error.headers };
    if (error.code === 'preview_unavailable') Object.assign(headers, NO_RETRY_HEADERS);
    if (error.code === 'service_unavailable' && !headers['retry-after']) headers['retry-after'] = '5';
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    const body = JSON.stringify(error.toBody());
    res.statusCode = error.status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', Buffer.byteLength(body));
    res.setHeader('cache-control', 'no-store');
    res.end(body);
    drainRequest(req, this.drain);
  }
}
