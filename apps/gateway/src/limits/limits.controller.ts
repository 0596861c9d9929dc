import { Controller, Get, Inject } from '@nestjs/common';
import { APP_CONFIG, fileLimitsOf, Public, type GatewayConfig } from '@app/common';
import { maxRequestBytes } from '../http/json-body.middleware';
import { MAX_UPLOAD_PART_BYTES } from '../http/upload-body';
import { ConverterAvailability } from '../previews/converter-availability';
import { maxPendingUploadBytes } from '../uploads/resumable/upload-admission';

/**
 * `max_file_bytes` keeps the contract's meaning, the largest file one request (POST /v1/files) takes;
 * the largest file of any kind is what a resumable upload may declare, `max_upload_bytes`.
 */
export function limitsBody(config: GatewayConfig, previewFormats: string[]) {
  const files = fileLimitsOf(config);
  return {
    object: 'limits' as const,
    max_file_bytes: files.maxSingleRequestFileBytes,
    max_inline_file_bytes: files.maxInlineFileBytes,
    max_request_bytes: maxRequestBytes(config),
    max_upload_bytes: files.maxFileBytes,
    max_upload_part_bytes: MAX_UPLOAD_PART_BYTES,
    preview: { enabled: previewFormats.length > 0, formats: previewFormats, timeout_ms: config.PREVIEW_TIMEOUT_MS },
    archive: { formats: ['zip'] },
    per_principal: {
      concurrent_uploads: config.UHP_MAX_CONCURRENT_UPLOADS,
      concurrent_downloads: config.UHP_MAX_CONCURRENT_DOWNLOADS,
      responses_in_flight: config.UHP_MAX_RESPONSES_IN_FLIGHT,
      pending_previews: config.UHP_MAX_PENDING_PREVIEWS,
      pending_uploads: config.UHP_MAX_PENDING_UPLOADS,
      pending_upload_bytes: maxPendingUploadBytes(config),
      archive_builds: config.UHP_MAX_ARCHIVE_BUILDS,
    },
  };
}

@Controller('v1/limits')
export class LimitsController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(ConverterAvailability) private readonly converters: ConverterAvailability,
  ) {}

  /** Preview formats are those some worker reported it can convert (converter_status). */
  @Public()
  @Get()
  async limits() {
    return limitsBody(this.config, await this.converters.formats());
  }
}
