import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { ApiError, APP_CONFIG, setDrainLimits, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';

/** Room for the multipart envelope when judging Content-Length against max_file_bytes. */
export const MULTIPART_ENVELOPE_BYTES = 64 * 1024;

/** A request body as the upload path reads it: its headers and its bytes, nothing of the HTTP exchange. */
export interface UploadBody {
  headers: IncomingHttpHeaders;
  stream: Readable;
  /** True once every byte of the body has arrived (false when the client went away mid-body). */
  isComplete(): boolean;
}

export const uploadBodyOf = (req: IncomingMessage): UploadBody => ({
  headers: req.headers,
  stream: req,
  isComplete: () => req.complete,
});

export const isMultipart = (req: IncomingMessage) => /^multipart\/form-data/i.test(req.headers['content-type'] ?? '');

/**
 * On routes that take a multipart upload: raises the drain budget to twice the file limit, and answers
 * 413 from a declared Content-Length over it before a byte of the body is read (and before any lookup).
 */
@Injectable()
export class UploadLengthGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {}

  canActivate(context: ExecutionContext): boolean {
    return judgeUploadLength(context.switchToHttp().getRequest<IncomingMessage>(), this.config, {
      maxBytes: effectiveLimitsOf(this.config).maxSingleRequestFileBytes,
      limitName: 'max_file_bytes',
      param: 'file',
    });
  }
}

/** UploadLengthGuard for an upload's part: at most max_upload_part_bytes of `data`. */
@Injectable()
export class UploadPartLengthGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {}

  canActivate(context: ExecutionContext): boolean {
    return judgeUploadLength(context.switchToHttp().getRequest<IncomingMessage>(), this.config, {
      maxBytes: effectiveLimitsOf(this.config).maxUploadPartBytes,
      limitName: 'max_upload_part_bytes',
      param: 'data',
    });
  }
}

function judgeUploadLength(
  req: IncomingMessage,
  config: GatewayConfig,
  limit: { maxBytes: number; limitName: string; param: string },
): boolean {
  if (!isMultipart(req)) return true;
  const { maxBytes } = limit;
  setDrainLimits(req, {
    maxBytes: 2 * (maxBytes + MULTIPART_ENVELOPE_BYTES),
    timeoutMs: config.UHP_DRAIN_TIMEOUT_MS,
  });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes + MULTIPART_ENVELOPE_BYTES) {
    throw new ApiError(
      'file_too_large',
      `The upload declares ${declared} bytes; ${limit.limitName} is ${maxBytes} (see GET /v1/limits).`,
      limit.param,
    );
  }
  return true;
}
