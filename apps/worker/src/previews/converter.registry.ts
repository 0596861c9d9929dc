import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ChromiumConverter } from './chromium/chromium.converter';
import { ConversionError } from './conversion.error';
import { ImageConverter } from './image/image.converter';
import { OfficeConverter } from './office/office.converter';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from './pdf-converter';
import { PdfPassthroughConverter } from './pdf/pdf-passthrough.converter';
import { PdfValidator } from './pdf/pdf.validator';
import { resolvePreviewOptions, type PreviewConverterOptions, type PreviewConverterOverrides } from './preview.options';
import { ProcessRunner } from './sandbox/sandbox';

/** Picks the converter for a file and answers for all of them at /readyz. */
export class ConverterRegistry {
  constructor(readonly converters: readonly PdfConverter[]) {}

  /** The first converter that accepts the file, or null (→ preview_failed, unsupported). */
  select(input: Pick<ConversionInput, 'contentType' | 'filename'>): PdfConverter | null {
    return this.converters.find((converter) => converter.accepts(input)) ?? null;
  }

  async convert(input: ConversionInput, output: ConversionOutput, signal: AbortSignal): Promise<PdfConverter> {
    const converter = this.select(input);
    if (!converter)
      throw new ConversionError('unsupported_type', `no preview for ${input.filename} (${input.contentType})`);
    await converter.convert(input, output, signal);
    return converter;
  }

  /** Each converter's availability by name; one that throws counts as unavailable. */
  async availability(): Promise<Record<string, Availability>> {
    const entries = await Promise.all(
      this.converters.map(async (converter): Promise<[string, Availability]> => {
        try {
          return [converter.name, await converter.available()];
        } catch (error) {
          return [converter.name, { ok: false, reason: error instanceof Error ? error.message : String(error) }];
        }
      }),
    );
    return Object.fromEntries(entries);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.converters.map((converter) => converter.close()));
  }
}

export interface PreviewConverters {
  registry: ConverterRegistry;
  office: OfficeConverter;
  chromium: ChromiumConverter;
  image: ImageConverter;
  pdf: PdfPassthroughConverter;
  options: PreviewConverterOptions;
}

/** Builds the four converters sharing one process runner and one PDF validator. */
export async function createPreviewConverters(overrides: PreviewConverterOverrides = {}): Promise<PreviewConverters> {
  const options = resolvePreviewOptions(overrides);
  await mkdir(join(options.workDir, 'scratch'), { recursive: true, mode: 0o700 });
  const runner = new ProcessRunner();
  const validator = new PdfValidator(
    runner,
    options.qpdfPath,
    {
      isolateNetwork: options.isolateNetwork,
      addressSpaceBytes: 1024 * 1024 * 1024,
      maxFileBytes: options.maxOutputBytes,
    },
    join(options.workDir, 'scratch'),
  );
  const office = new OfficeConverter(options, runner, validator);
  const chromium = new ChromiumConverter(options, validator);
  const image = new ImageConverter(options);
  const pdf = new PdfPassthroughConverter(validator);
  return { registry: new ConverterRegistry([pdf, office, chromium, image]), office, chromium, image, pdf, options };
}
