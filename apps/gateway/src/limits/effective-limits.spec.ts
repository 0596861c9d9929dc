import { describe, expect, it } from 'vitest';
import { gatewayConfig } from '../../../../test/fakes/gateway';
import { effectiveLimitsOf, MAX_UPLOAD_PART_BYTES } from './effective-limits';
import { limitsBody } from './limits.controller';

const MiB = 1024 * 1024;

describe('effectiveLimitsOf', () => {
  it('serves in GET /v1/limits exactly what the routes enforce', () => {
    const config = gatewayConfig({ UHP_MAX_FILE_BYTES: String(6 * MiB), ARCHIVE_MAX_BYTES: '5000' });
    const limits = effectiveLimitsOf(config);
    expect(limitsBody(config, [])).toMatchObject({
      max_file_bytes: limits.maxSingleRequestFileBytes,
      max_inline_file_bytes: limits.maxInlineFileBytes,
      max_request_bytes: limits.maxRequestBytes,
      max_upload_bytes: limits.maxUploadBytes,
      max_upload_part_bytes: limits.maxUploadPartBytes,
      archive: { formats: ['zip'], max_bytes: 5000 },
    });
  });

  it('never advertises an inline file, a single-request file or a part above the file limit', () => {
    const limits = effectiveLimitsOf(
      gatewayConfig({
        UHP_MAX_FILE_BYTES: String(2 * MiB),
        UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(3 * MiB),
        UHP_MAX_INLINE_FILE_BYTES: String(4 * MiB),
      }),
    );
    expect(limits).toMatchObject({
      maxUploadBytes: 2 * MiB,
      maxSingleRequestFileBytes: 2 * MiB,
      maxInlineFileBytes: 2 * MiB,
      maxUploadPartBytes: 2 * MiB,
    });
    // The body limit derives from the inline limit in effect, so it takes one inline file at that limit.
    expect(limits.maxRequestBytes).toBe(4 * Math.ceil((2 * MiB) / 3) + 64 * 1024);
  });

  it('keeps the Uploads API part limit of 64 MiB when files may be larger', () => {
    expect(effectiveLimitsOf(gatewayConfig({ UHP_MAX_FILE_BYTES: String(1024 * MiB) })).maxUploadPartBytes).toBe(
      MAX_UPLOAD_PART_BYTES,
    );
  });
});
