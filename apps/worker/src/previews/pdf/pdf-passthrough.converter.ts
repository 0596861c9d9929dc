import { copyFile } from 'node:fs/promises';
import { ConversionError, toConversionError } from '../conversion.error';
import { previewTypeOf } from '@app/contracts';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from '../pdf-converter';
import type { PdfValidator } from './pdf.validator';

/** A PDF is served as is (docs/api.md §6), once `qpdf --check` agrees it is one. */
export class PdfPassthroughConverter implements PdfConverter {
  readonly name = 'pdf';
  readonly version = '1';

  constructor(
    private readonly validator: PdfValidator,
    readonly maxInputBytes: number,
  ) {}

  accepts(input: { contentType: string; filename: string }): boolean {
    return previewTypeOf(input)?.kind === 'pdf';
  }

  available(): Promise<Availability> {
    return this.validator.probe();
  }

  async convert(input: ConversionInput, output: ConversionOutput, signal: AbortSignal): Promise<void> {
    if (!this.accepts(input))
      throw new ConversionError('unsupported_type', `not a PDF: ${input.filename} (${input.contentType})`);
    try {
      await this.validator.check(input.path, 'corrupt_document', signal);
      await copyFile(input.path, output.path);
    } catch (error) {
      throw toConversionError(error, signal);
    }
  }

  async close(): Promise<void> {}
}
