import { open } from 'node:fs/promises';
import { ConversionError } from '../conversion.error';
import { cleanEnvironment, ProcessRunner, type SandboxLimits } from '../sandbox/sandbox';

const QPDF_TIMEOUT_MS = 30_000;

/** True when the first KiB holds the `%PDF-` header (readers allow leading junk up to 1024 bytes). */
export function hasPdfHeader(head: Buffer): boolean {
  return head.subarray(0, 1024).includes('%PDF-');
}

export async function readHead(path: string, bytes = 1024): Promise<Buffer> {
  const handle = await open(path, 'r');
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
 */
export class PdfValidator {
  constructor(
    private readonly runner: ProcessRunner,
    private readonly qpdfPath: string,
    private readonly limits: SandboxLimits,
    private readonly scratchDir: string,
  ) {}

  /** Throws ConversionError(failure) when `path` is not a usable PDF. */
  async check(path: string, failure: 'invalid_output' | 'corrupt_document', signal?: AbortSignal): Promise<void> {
    let head: Buffer;
    try {
      head = await readHead(path);
    } catch (error) {
      throw new ConversionError(failure, 'no PDF was written', { cause: error });
    }
    if (!hasPdfHeader(head)) throw new ConversionError(failure, 'not a PDF (no %PDF- header)');
    const result = await this.runner.run({
      command: this.qpdfPath,
      args: ['--check', path],
      limits: this.limits,
      env: cleanEnvironment(this.scratchDir),
      cwd: this.scratchDir,
      timeoutMs: QPDF_TIMEOUT_MS,
      signal,
    });
    if (result.code === 0 || result.code === 3) return;
    const detail = (result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ');
    throw new ConversionError(failure, `qpdf --check failed (exit ${result.code ?? result.signal}): ${detail}`);
  }

  async probe(): Promise<{ ok: boolean; reason?: string }> {
    try {
      const result = await this.runner.run({
        command: this.qpdfPath,
        args: ['--version'],
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
