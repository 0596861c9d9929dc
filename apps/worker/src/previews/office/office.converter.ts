import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConversionError, toConversionError } from '../conversion.error';
import { previewTypeOf, type OfficeExtension } from '@app/contracts';
import { assertInputSize } from '../input-limits';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from '../pdf-converter';
import { readHead, type PdfValidator } from '../pdf/pdf.validator';
import type { PreviewConverterOptions } from '../preview.options';
import { cleanEnvironment, type ProcessRunner, type SandboxLimits } from '../sandbox/sandbox';
import { matchesMagic, OFFICE_IMPORTS } from './office-filters';
import { OfficeProcess } from './office-process';
import { buildIdOf, productVersionOf } from './office-profile';
import type { ConverterFiles } from '../sandbox/converter-files';

/** Source checkout and `nest build` output both keep the script beside this file (see nest-cli.json assets). */
export const UNO_BRIDGE_SCRIPT = join(__dirname, 'uno-bridge.py');

interface Slot {
  index: number;
  generation: number;
  process: OfficeProcess | undefined;
  starting: Promise<OfficeProcess> | undefined;
  busy: boolean;
}

/** What the pool reports for tests and metrics. */
export interface OfficeSlotState {
  index: number;
  generation: number;
  pid: number | undefined;
  sofficePid: number | undefined;
  conversions: number;
  busy: boolean;
}

/**
 * Office documents through a pool of warm LibreOffice processes (docs/api.md §6). Each slot holds one
 * OfficeProcess; a conversion takes a free slot or waits for one. A slot's process is replaced after
 * `maxConversionsPerProcess` conversions, and at once after any failure that may have left it in a bad
 * state (timeout, crash, abort); a document that merely fails to load does not cost a restart.
 */
export class OfficeConverter implements PdfConverter {
  readonly name = 'libreoffice';
  readonly version = '1';
  readonly maxInputBytes: number;
  private readonly slots: Slot[];
  private readonly waiters: Array<(slot: Slot) => void> = [];
  private productVersion: Promise<string> | undefined;
  private buildId: Promise<string | null> | undefined;
  private readonly limits: SandboxLimits;
  private closed = false;

  constructor(
    private readonly options: PreviewConverterOptions,
    private readonly runner: ProcessRunner,
    private readonly validator: PdfValidator,
    /** LibreOffice's bridge script, where soffice's uid can read it (converter-files.ts). */
    private readonly files: Pick<ConverterFiles, 'unoBridgeScript'> = { unoBridgeScript: UNO_BRIDGE_SCRIPT },
  ) {
    this.slots = Array.from({ length: Math.max(1, options.office.poolSize) }, (_, index) => ({
      index,
      generation: 0,
      process: undefined,
      starting: undefined,
      busy: false,
    }));
    this.limits = { addressSpaceBytes: options.office.addressSpaceBytes, maxFileBytes: options.maxOutputBytes };
    this.maxInputBytes = options.office.maxInputBytes;
  }

  accepts(input: { contentType: string; filename: string }): boolean {
    return previewTypeOf(input)?.kind === 'office';
  }

  async available(): Promise<Availability> {
    try {
      await this.version$();
    } catch (error) {
      return { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
    const qpdf = await this.validator.probe();
    if (!qpdf.ok) return qpdf;
    try {
      const slot = await this.acquire();
      this.release(slot);
      return { ok: true };
    } catch (error) {
      return { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Starts every slot's process now instead of on first use. */
  async warmUp(): Promise<void> {
    await Promise.all(this.slots.map((slot) => this.ensureStarted(slot)));
  }

  state(): OfficeSlotState[] {
    return this.slots.map((slot) => ({
      index: slot.index,
      generation: slot.generation,
      pid: slot.process?.pid,
      sofficePid: slot.process?.sofficePid,
      conversions: slot.process?.conversions ?? 0,
      busy: slot.busy,
    }));
  }

  async convert(input: ConversionInput, output: ConversionOutput, signal: AbortSignal): Promise<void> {
    const type = previewTypeOf(input);
    if (type?.kind !== 'office')
      throw new ConversionError('unsupported_type', `not an office document: ${input.filename} (${input.contentType})`);
    const extension = type.extension as OfficeExtension;
    await assertInputSize(input.path, this.maxInputBytes, 'office documents');
    const head = await readHead(input.path, 16).catch((error: unknown) => {
      throw new ConversionError('corrupt_document', 'cannot read the input', { cause: error });
    });
    if (!matchesMagic(extension, head))
      throw new ConversionError('corrupt_document', `the file is not a ${extension} document (wrong signature)`);
    if (signal.aborted) throw new ConversionError('aborted', 'conversion aborted');

    const slot = await this.acquire(signal);
    let process: OfficeProcess | undefined;
    try {
      process = await this.ensureStarted(slot);
      // Fixed names inside the member's private io dir: the user's file name never reaches LibreOffice.
      const source = join(process.ioDir, `input.${extension}`);
      const target = join(process.ioDir, 'output.pdf');
      await rm(target, { force: true });
      await this.runner.copyInto(input.path, source, process.identity);
      try {
        await this.withDeadline(
          process,
          signal,
          process.convert({
            input: source,
            output: target,
            filter: OFFICE_IMPORTS[extension].filter,
            filterOptions: OFFICE_IMPORTS[extension].filterOptions,
          }),
        );
        // qpdf checks the output as this member's uid, in its own directory; then it is copied out (no link).
        await this.validator.check(target, 'invalid_output', signal, {
          identity: process.identity,
          home: process.ioDir,
        });
        await this.runner.copyOut(target, output.path);
      } finally {
        await rm(source, { force: true });
        await rm(target, { force: true });
      }
      if (process.conversions >= this.options.office.maxConversionsPerProcess) await this.retire(slot);
    } catch (raw) {
      const error = toConversionError(raw, signal);
      // A refused document leaves soffice healthy; anything else may not have, so the process goes.
      if (!error.isPermanent || !process?.isAlive) await this.retire(slot);
      throw error;
    } finally {
      this.release(slot);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot.starting?.catch(() => undefined)));
    await Promise.all(this.slots.map((slot) => this.retire(slot)));
    this.closed = false;
  }

  private version$(): Promise<string> {
    this.productVersion ??= this.runner
      .run({
        command: this.options.office.sofficePath,
        args: ['--version'],
        identity: this.validator.identity,
        limits: this.limits,
        env: cleanEnvironment(this.validator.identity.writable[0]!),
        cwd: '/',
        timeoutMs: 20_000,
      })
      .then((result) => {
        const version = productVersionOf(result.stdout);
        if (!version)
          throw new ConversionError(
            'unavailable',
            `cannot read the LibreOffice version: ${(result.stdout + result.stderr).trim().slice(0, 200)}`,
          );
        return version;
      })
      .catch((error: unknown) => {
        this.productVersion = undefined;
        throw error;
      });
    return this.productVersion;
  }

  private ensureStarted(slot: Slot): Promise<OfficeProcess> {
    if (slot.process?.isAlive) return Promise.resolve(slot.process);
    slot.starting ??= (async () => {
      await slot.process?.stop();
      slot.process = undefined;
      slot.generation++;
      await this.runner.makeSharedDir(join(this.options.workDir, 'office'));
      const process = new OfficeProcess(this.runner, {
        // Unpredictable: soffice's single-instance pipe in /tmp is named after the profile's path.
        dir: join(this.options.workDir, 'office', `${slot.index}-${slot.generation}-${randomBytes(6).toString('hex')}`),
        slot: slot.index,
        // Unguessable: the pipe lives in /tmp, where converters of other slots could connect to a known name.
        pipeName: `uhp-${globalThis.process.pid}-${slot.index}-${slot.generation}-${randomBytes(12).toString('hex')}`,
        bridgeScript: this.files.unoBridgeScript,
        pythonPath: this.options.office.pythonPath,
        sofficePath: this.options.office.sofficePath,
        productVersion: await this.version$(),
        buildId: await (this.buildId ??= readFile(join(dirname(this.options.office.sofficePath), 'setuprc'), 'utf8')
          .then(buildIdOf)
          .catch(() => null)),
        startTimeoutMs: this.options.office.startTimeoutMs,
        limits: this.limits,
      });
      await process.start();
      slot.process = process;
      return process;
    })().finally(() => {
      slot.starting = undefined;
    });
    return slot.starting;
  }

  /** Stops the slot's process; unless closing, its replacement starts now so the pool stays warm. */
  private async retire(slot: Slot): Promise<void> {
    const process = slot.process;
    slot.process = undefined;
    await process?.stop();
    if (!this.closed) void this.ensureStarted(slot).catch(() => undefined);
  }

  /** Kills the process group when the wall-clock limit passes or the caller aborts. */
  private async withDeadline(process: OfficeProcess, signal: AbortSignal, work: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        void process.stop();
        reject(
          new ConversionError('timeout', `conversion ran past ${this.options.timeoutMs} ms; LibreOffice was killed`),
        );
      }, this.options.timeoutMs);
      onAbort = () => {
        void process.stop();
        reject(new ConversionError('aborted', 'conversion aborted'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      await Promise.race([work, stopped]);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort!);
      work.catch(() => undefined);
    }
  }

  private acquire(signal?: AbortSignal): Promise<Slot> {
    if (this.closed) return Promise.reject(new ConversionError('unavailable', 'office converter is closing'));
    const free = this.slots.find((slot) => !slot.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    return new Promise<Slot>((resolve, reject) => {
      const waiter = (slot: Slot) => {
        signal?.removeEventListener('abort', onAbort);
        slot.busy = true;
        resolve(slot);
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new ConversionError('aborted', 'conversion aborted while waiting for LibreOffice'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private release(slot: Slot): void {
    slot.busy = false;
    const next = this.waiters.shift();
    if (next) next(slot);
  }
}
