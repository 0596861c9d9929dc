import { fileLimitsOf, maxRequestBytesOf, type GatewayConfig } from '@app/common';

/** The largest part of a resumable upload (POST /v1/uploads/{id}/parts), as OpenAI's Uploads API has it. */
export const MAX_UPLOAD_PART_BYTES = 64 * 1024 * 1024;

/** Every size limit as the gateway enforces it and GET /v1/limits serves it. */
export interface EffectiveLimits {
  /** A file streamed in by one request: POST /v1/files, container file uploads, agent artifacts. */
  maxSingleRequestFileBytes: number;
  /** A file inline in a response's input (a data URL), decoded. */
  maxInlineFileBytes: number;
  /** A JSON request body. */
  maxRequestBytes: number;
  /** Any file: what a resumable upload (Uploads API, tus) may declare. */
  maxUploadBytes: number;
  /** One part of an Uploads API upload. */
  maxUploadPartBytes: number;
  /** A session archive (ZIP). */
  maxArchiveBytes: number;
}

/**
 * The limits in effect, from configuration: one function for the routes that enforce them and for
 * GET /v1/limits, so what is advertised is what is accepted. Each is the smallest of the limits bounding
 * it: an inline file or a part is a file too, and a part larger than any upload could never complete.
 */
export function effectiveLimitsOf(config: GatewayConfig): EffectiveLimits {
  const files = fileLimitsOf(config);
  return {
    maxSingleRequestFileBytes: files.maxSingleRequestFileBytes,
    maxInlineFileBytes: files.maxInlineFileBytes,
    maxRequestBytes: maxRequestBytesOf(config),
    maxUploadBytes: files.maxFileBytes,
    maxUploadPartBytes: Math.min(MAX_UPLOAD_PART_BYTES, files.maxFileBytes),
    maxArchiveBytes: config.ARCHIVE_MAX_BYTES,
  };
}
