import { Controller, Get, Inject } from '@nestjs/common';
import { APP_CONFIG, Public, type GatewayConfig } from '@app/common';
import { maxRequestBytes } from '../http/json-body.middleware';

/** PREVIEW_FORMATS grows as converters land (the previews issue); none are installed yet. */
export const PREVIEW_FORMATS: readonly string[] = [];

export function limitsBody(config: GatewayConfig) {
  return {
    object: 'limits' as const,
    max_file_bytes: config.UHP_MAX_FILE_BYTES,
    max_inline_file_bytes: config.UHP_MAX_INLINE_FILE_BYTES,
    max_request_bytes: maxRequestBytes(config),
    preview: { enabled: config.PREVIEW_ENABLED && PREVIEW_FORMATS.length > 0, formats: [...PREVIEW_FORMATS], timeout_ms: config.PREVIEW_TIMEOUT_MS },
    archive: { formats: ['zip'] },
  };
}

@Controller('v1/limits')
export class LimitsController {
  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {}

  @Public()
  @Get()
  limits() {
    return limitsBody(this.config);
  }
}
