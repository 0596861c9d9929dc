import { UnrecoverableError } from 'bullmq';
import { describe, expect, it, vi } from 'vitest';
import { JOB } from '@app/contracts';
import { inMemoryPlatform } from '../../../../test/fakes/platform';
import { fakeJob, processorContext, runAttempts } from '../../../../test/fakes/worker';
import { ConversionError, PUBLIC_FAILURE_MESSAGES } from './conversion.error';
import { PreviewConversionService } from './preview-conversion.service';
import { PreviewProcessor } from './preview.processor';

/** A PENDING previews row in memory, and the processor whose conversions are what the test says. */
function setUp() {
  const platform = inMemoryPlatform();
  const previewId = platform.memory.uuid();
  platform.memory.tables.previews.push({
    id: previewId,
    principalId: platform.memory.uuid(),
    sha256: 'a'.repeat(64),
    format: 'pdf',
    version: 1,
    status: 'PENDING',
    generation: 2,
    sourceObjectId: platform.memory.uuid(),
    sourceFilename: 'report.docx',
    sourceContentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    objectId: null,
    bytes: null,
    pdfSha256: null,
    converter: null,
    errorCode: null,
    errorMessage: null,
    permanent: false,
  });
  const unused = null as never;
  const conversions = new PreviewConversionService(platform.previews, unused, unused, unused, unused, unused, unused);
  const { context, counted } = processorContext();
  const processor = new PreviewProcessor(conversions, context);
  const job = fakeJob(JOB.convertPreview, { previewId, generation: 2 }, 3);
  const row = () => platform.memory.tables.previews.find((preview) => preview.id === previewId)!;
  return { conversions, processor, job, row, counted };
}

describe('PreviewProcessor uses the give-up policy of QueueProcessor', () => {
  it('a transient failure (the converter crashed) is retried, and recorded once the last attempt fails', async () => {
    const { conversions, processor, job, row } = setUp();
    const convert = vi.spyOn(conversions, 'convert').mockImplementation(async () => {
      expect(row().status).toBe('PENDING');
      throw new ConversionError('process_crashed', 'soffice exited with signal 9');
    });
    const result = await runAttempts(processor, job);
    expect(result.attempts).toEqual(['failed', 'failed', 'failed']);
    expect(result.error).toBeInstanceOf(ConversionError);
    expect(convert).toHaveBeenCalledTimes(3);
    expect(row()).toMatchObject({
      status: 'FAILED',
      errorCode: 'process_crashed',
      errorMessage: PUBLIC_FAILURE_MESSAGES.process_crashed,
      permanent: false,
    });
  });

  it('a permanent failure (a corrupt document) is recorded at once and not retried', async () => {
    const { conversions, processor, job, row, counted } = setUp();
    vi.spyOn(conversions, 'convert').mockRejectedValue(new ConversionError('corrupt_document', 'not a zip file'));
    const result = await runAttempts(processor, job);
    expect(result.attempts).toEqual(['failed for good']);
    expect(result.error).toBeInstanceOf(UnrecoverableError);
    expect(row()).toMatchObject({ status: 'FAILED', errorCode: 'corrupt_document', permanent: true });
    expect(await counted()).toEqual({ 'convert-preview failed': 1 });
  });

  it('a conversion that succeeds on its second attempt records nothing failed', async () => {
    const { conversions, processor, job, row } = setUp();
    vi.spyOn(conversions, 'convert')
      .mockRejectedValueOnce(new ConversionError('timeout', 'over the time limit'))
      .mockResolvedValueOnce('converted');
    expect(await runAttempts(processor, job)).toMatchObject({ attempts: ['failed', 'completed'], value: 'converted' });
    expect(row().status).toBe('PENDING');
  });
});
