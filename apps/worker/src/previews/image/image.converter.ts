import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { previewTypeOf } from '@app/contracts';
import { ConversionError, toConversionError, type ConversionFailure } from '../conversion.error';
import { assertInputSize } from '../input-limits';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from '../pdf-converter';
import type { PdfValidator } from '../pdf/pdf.validator';
import type { PreviewConverterOptions } from '../preview.options';
import type { ConverterFiles } from '../sandbox/converter-files';
import {
  cleanEnvironment,
  SANDBOX_UIDS,
  type ProcessRunner,
  type SandboxIdentity,
  type SandboxLimits,
} from '../sandbox/sandbox';
import { REFUSED } from './image-render.cjs';

/** The renderer's script, beside this file in the source tree and in dist/ (a Nest asset). */
export const IMAGE_RENDER_SCRIPT = join(__dirname, 'image-render.cjs');
/** Where sharp, libvips and pdf-lib are installed: the renderer may read it, and nothing else of the app's. */
export const NODE_MODULES = dirname(dirname(createRequire(__filename).resolve('sharp/package.json')));
const PROBE_TIMEOUT_MS = 15_000;
const PERMANENT_REFUSALS: ReadonlySet<ConversionFailure> = new Set(['too_large', 'corrupt_document']);

/**
 * png, jpeg, gif and webp laid on a PDF page by image-render.cjs: one Node process per image, confined like
 * every converter (its own uid or Landlock, no network, an address-space and file-size limit), so a hostile image
 * meets libvips outside the worker and the worker never loads sharp or pdf-lib. The PDF it writes is checked by
 * qpdf and copied out of its directory as a regular file only.
 */
export class ImageConverter implements PdfConverter {
  readonly name = 'image';
  readonly version = '1';
  readonly maxInputBytes: number;
  /** The renderer's own directory: its input is copied in, its PDF copied out. */
  readonly dir: string;
  readonly identity: SandboxIdentity;
  private readonly limits: SandboxLimits;
  private probed: Availability | null = null;

  constructor(
    private readonly options: PreviewConverterOptions,
    private readonly runner: ProcessRunner,
    private readonly validator: PdfValidator,
    /** The renderer script, its packages and Node, where the renderer's uid can read them (converter-files.ts). */
    readonly files: Pick<ConverterFiles, 'imageRenderScript' | 'nodeModules' | 'node'> = {
      imageRenderScript: IMAGE_RENDER_SCRIPT,
      nodeModules: NODE_MODULES,
      node: process.execPath,
    },
  ) {
    this.maxInputBytes = options.image.maxInputBytes;
    this.dir = join(options.workDir, 'image');
    this.identity = {
      uidOffset: SANDBOX_UIDS.image,
      writable: [this.dir],
      // Node too: where it is not beneath a system directory (nvm), Landlock would refuse to run it.
      readable: [files.imageRenderScript, files.nodeModules, files.node],
    };
    this.limits = { addressSpaceBytes: options.image.addressSpaceBytes, maxFileBytes: options.maxOutputBytes };
  }

  /** The renderer's own directory, owned by its uid (call once before use). */
  async prepare(): Promise<void> {
    await this.runner.makeOwnDir(this.dir, this.identity);
  }

  accepts(input: { contentType: string; filename: string }): boolean {
    return previewTypeOf(input)?.kind === 'image';
  }

  /** sharp's decoders cannot change while the worker runs: a successful probe is not repeated. */
  async available(): Promise<Availability> {
    if (this.probed?.ok) return this.probed;
    const result = await this.renderer(['probe'], PROBE_TIMEOUT_MS);
    if (result.code !== 0) return { ok: false, reason: `the image renderer did not start: ${lastLines(result)}` };
    const { missing } = JSON.parse(lastLine(result.stdout)) as { missing: string[] };
    this.probed = missing.length ? { ok: false, reason: `sharp cannot decode ${missing.join(', ')}` } : { ok: true };
    return this.probed;
  }

  async convert(input: ConversionInput, output: ConversionOutput, signal: AbortSignal): Promise<void> {
    if (!this.accepts(input))
      throw new ConversionError('unsupported_type', `not an image: ${input.filename} (${input.contentType})`);
    const id = randomBytes(8).toString('hex');
    const source = join(this.dir, `${id}-source`);
    const pdf = join(this.dir, `${id}.pdf`);
    try {
      await assertInputSize(input.path, this.maxInputBytes, 'images');
      await this.runner.copyInto(input.path, source, this.identity);
      const { maxInputPixels, maxPlacedPixels } = this.options.image;
      const result = await this.renderer(
        ['render', source, pdf, String(maxInputPixels), String(maxPlacedPixels)],
        this.options.timeoutMs,
        signal,
      );
      if (result.code === REFUSED) throw refusal(result.stdout);
      if (result.code !== 0)
        throw new ConversionError(
          'process_crashed',
          `the image renderer exited ${result.code ?? result.signal}: ${lastLines(result)}`,
        );
      await this.validator.check(pdf, 'invalid_output', signal, { identity: this.identity, home: this.dir });
      await this.runner.copyOut(pdf, output.path);
    } catch (error) {
      throw toConversionError(error, signal);
    } finally {
      await Promise.all([rm(source, { force: true }), rm(pdf, { force: true })]);
    }
  }

  async close(): Promise<void> {}

  private renderer(args: string[], timeoutMs: number, signal?: AbortSignal) {
    return this.runner.run({
      command: this.files.node,
      args: [this.files.imageRenderScript, ...args],
      identity: this.identity,
      limits: this.limits,
      env: cleanEnvironment(this.dir),
      cwd: this.dir,
      timeoutMs,
      signal,
    });
  }
}

const lastLine = (text: string) => text.trim().split('\n').at(-1) ?? '';
const lastLines = (result: { stdout: string; stderr: string }) =>
  (result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ');

/** The renderer's refusal line, as the permanent failure it names; anything else it printed is a crash. */
function refusal(stdout: string): ConversionError {
  try {
    const { failure, message } = JSON.parse(lastLine(stdout)) as { failure: ConversionFailure; message: string };
    if (PERMANENT_REFUSALS.has(failure)) return new ConversionError(failure, message);
  } catch {
    // not the renderer's line
  }
  return new ConversionError('process_crashed', `the image renderer refused without a reason: ${lastLine(stdout)}`);
}
