import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ChromiumConverter } from './chromium/chromium.converter';
import { ConversionError } from './conversion.error';
import { IMAGE_RENDER_SCRIPT, ImageConverter, NODE_MODULES } from './image/image.converter';
import { OfficeConverter, UNO_BRIDGE_SCRIPT } from './office/office.converter';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from './pdf-converter';
import { PdfPassthroughConverter } from './pdf/pdf-passthrough.converter';
import { PdfValidator } from './pdf/pdf.validator';
import { resolvePreviewOptions, type PreviewConverterOptions, type PreviewConverterOverrides } from './preview.options';
import { converterFilesFor, type ConverterFiles } from './sandbox/converter-files';
import { detectIsolation } from './sandbox/isolation';
import { ProcessRunner, type IsolationMode } from './sandbox/sandbox';

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
  /** How every converter process is confined here (decided now, by probing; Chromium may narrow it at launch). */
  isolation: IsolationMode;
  runner: ProcessRunner;
}

/** The project's files converters run or read, where the worker finds them (beside its code, its node_modules). */
export const CONVERTER_SOURCES: ConverterFiles = {
  imageRenderScript: IMAGE_RENDER_SCRIPT,
  nodeModules: NODE_MODULES,
  unoBridgeScript: UNO_BRIDGE_SCRIPT,
  node: process.execPath,
};

/**
 * Builds the four converters sharing one process runner and one PDF validator, after deciding how converter
 * processes are confined on this host (sandbox/isolation.ts). In `uid` mode the work dir and its parents must be
 * traversable by other uids (0711): the converters' own directories are beneath it, and so are the copies of
 * the project's files they read (converter-files.ts), never the checkout itself.
 */
export async function createPreviewConverters(overrides: PreviewConverterOverrides = {}): Promise<PreviewConverters> {
  const options = resolvePreviewOptions(overrides);
  await mkdir(options.workDir, { recursive: true, mode: 0o711 });
  await chmod(options.workDir, 0o711);
  const launcher = { pythonPath: options.sandbox.pythonPath, launcherPath: options.sandbox.launcherPath };
  const isolation = await detectIsolation({
    network: options.sandbox.network,
    uidBase: options.sandbox.uidBase,
    launcher,
    probeDir: join(options.workDir, 'probe'),
    only: options.sandbox.only,
  });
  const files = await converterFilesFor(isolation, join(options.workDir, 'files'), CONVERTER_SOURCES);
  const runner = new ProcessRunner(isolation, launcher);
  await runner.makeSharedDir(options.workDir);
  const validator = new PdfValidator(
    runner,
    options.qpdfPath,
    { addressSpaceBytes: 1024 * 1024 * 1024, maxFileBytes: options.maxOutputBytes },
    join(options.workDir, 'scratch'),
  );
  await validator.prepare();
  const office = new OfficeConverter(options, runner, validator, files);
  const chromium = new ChromiumConverter(options, runner, validator);
  const image = new ImageConverter(options, runner, validator, files);
  await image.prepare();
  const pdf = new PdfPassthroughConverter(validator, options.maxOutputBytes);
  const registry = new ConverterRegistry([pdf, office, chromium, image]);
  return { registry, office, chromium, image, pdf, options, isolation, runner };
}
