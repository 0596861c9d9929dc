import { Controller, Get, Inject } from '@nestjs/common';
import { APP_CONFIG, Public, type GatewayConfig } from '@app/common';
import { ConverterAvailability } from '../previews/converter-availability';
import { maxPendingUploadBytes } from '../uploads/resumable/upload-admission';
import { effectiveLimitsOf } from './effective-limits';

/**
 * `max_file_bytes` keeps the contract's meaning, the largest file one request (POST /v1/files) takes;
 * the largest file of any kind is what a resumable upload may declare, `max_upload_bytes`.
 */
export function limitsBody(config: GatewayConfig, previewFormats: string[]) {
  const limits = effectiveLimitsOf(config);
  return {
    object: 'limits' as const,
    max_file_bytes: limits.maxSingleRequestFileBytes,
    max_inline_file_bytes: limits.maxInlineFileBytes,
    max_request_bytes: limits.maxRequestBytes,
    max_upload_bytes: limits.maxUploadBytes,
    max_upload_part_bytes: limits.maxUploadPartBytes,
    preview: { enabled: previewFormats.length > 0, formats: previewFormats, timeout_ms: config.PREVIEW_TIMEOUT_MS },
    archive: { formats: ['zip'], max_bytes: limits.maxArchiveBytes },
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
