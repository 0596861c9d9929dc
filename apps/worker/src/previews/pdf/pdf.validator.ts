import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConversionError } from '../conversion.error';
import {
  cleanEnvironment,
  SANDBOX_UIDS,
  type ProcessRunner,
  type SandboxIdentity,
  type SandboxLimits,
} from '../sandbox/sandbox';

const QPDF_TIMEOUT_MS = 30_000;

/** True when the first KiB holds the `%PDF-` header (readers allow leading junk up to 1024 bytes). */
export function hasPdfHeader(head: Buffer): boolean {
  return head.subarray(0, 1024).includes('%PDF-');
}

/** The first bytes of a file; never through a link (a converter may have put one where its output belongs). */
export async function readHead(path: string, bytes = 1024): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } catch (error) {
    throw new ConversionError('invalid_output', `cannot read ${path}`, { cause: error });
  } finally {
    await handle.close();
  }
}

/**
 * Nothing is returned as a preview unless it parses as a PDF: `%PDF-` in the first KiB and
 * `qpdf --check` exiting 0 (clean) or 3 (warnings, which viewers recover from). Exit 2 means errors.
 * qpdf is confined like every converter: as the identity that owns the file (a LibreOffice slot checking its
 * own output), or as the tools identity on a copy in its own scratch directory.
 */
export class PdfValidator {
  readonly identity: SandboxIdentity;

  constructor(
    private readonly runner: ProcessRunner,
    private readonly qpdfPath: string,
    private readonly limits: SandboxLimits,
    private readonly scratchDir: string,
  ) {
    this.identity = { uidOffset: SANDBOX_UIDS.tools, writable: [scratchDir] };
  }

  /** The tools' own directory, owned by their uid (call once before use). */
  async prepare(): Promise<void> {
    await this.runner.makeOwnDir(this.scratchDir, this.identity);
  }

  /**
   * Throws ConversionError(failure) when `path` is not a usable PDF. `as`: the identity whose directory holds
   * `path` (qpdf runs as it, in place); otherwise qpdf checks a copy in the tools' directory.
   */
  async check(
    path: string,
    failure: 'invalid_output' | 'corrupt_document',
    signal?: AbortSignal,
    as?: { identity: SandboxIdentity; home: string },
  ): Promise<void> {
    let head: Buffer;
    try {
      head = await readHead(path);
    } catch (error) {
      throw new ConversionError(failure, 'no PDF was written', { cause: error });
    }
    if (!hasPdfHeader(head)) throw new ConversionError(failure, 'not a PDF (no %PDF- header)');
    const copy = as ? undefined : join(this.scratchDir, `check-${randomBytes(8).toString('hex')}.pdf`);
    try {
      if (copy) await this.runner.copyInto(path, copy, this.identity);
      const home = as?.home ?? this.scratchDir;
      const result = await this.runner.run({
        command: this.qpdfPath,
        args: ['--check', copy ?? path],
        identity: as?.identity ?? this.identity,
        limits: this.limits,
        env: cleanEnvironment(home),
        cwd: home,
        timeoutMs: QPDF_TIMEOUT_MS,
        signal,
      });
      if (result.code === 0 || result.code === 3) return;
      const detail = (result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ');
      throw new ConversionError(failure, `qpdf --check failed (exit ${result.code ?? result.signal}): ${detail}`);
    } finally {
      if (copy) await rm(copy, { force: true });
    }
  }

  async probe(): Promise<{ ok: boolean; reason?: string }> {
    try {
      const result = await this.runner.run({
        command: this.qpdfPath,
        args: ['--version'],
        identity: this.identity,
        limits: this.limits,
        env: cleanEnvironment(this.scratchDir),
        cwd: this.scratchDir,
        timeoutMs: 10_000,
      });
      return result.code === 0
        ? { ok: true }
        : { ok: false, reason: `qpdf --version exited ${result.code}: ${result.stderr.trim()}` };
    } catch (error) {
      return { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }
}
