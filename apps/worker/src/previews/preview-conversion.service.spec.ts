import { describe, expect, it, vi } from 'vitest';
import type { PreviewRepository } from '@app/db';
import { ConversionError, PUBLIC_FAILURE_MESSAGES } from './conversion.error';
import { PreviewConversionService } from './preview-conversion.service';

describe('PreviewConversionService.fail', () => {
  it("records the failure class and its fixed sentence, never the error's own text", async () => {
    const markFailed = vi.fn(async () => undefined);
    const unused = null as never;
    const previews = { markFailed } as unknown as PreviewRepository;
    const service = new PreviewConversionService(previews, unused, unused, unused, unused, unused, unused);
    const error = new ConversionError(
      'invalid_output',
      'qpdf --check failed (exit 2): /tmp/uhp-previews-9/converters/scratch/check-1f2e.pdf: xref not found',
    );
    await service.fail('preview-1', 3, error);
    expect(markFailed).toHaveBeenCalledWith('preview-1', 3, {
      code: 'invalid_output',
      message: PUBLIC_FAILURE_MESSAGES.invalid_output,
      permanent: true,
    });
  });
});
