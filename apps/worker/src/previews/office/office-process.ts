import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ConversionError } from '../conversion.error';
import { cleanEnvironment, type ProcessRunner, type SandboxedProcess, type SandboxLimits } from '../sandbox/sandbox';
import { registryModifications } from './office-profile';

export interface OfficeProcessSettings {
  /** This member's own directory: profile/ and io/ live under it and are wiped on every start. */
  dir: string;
  /** Unique among all members of all pools on the machine (LibreOffice pipes live in /tmp). */
  pipeName: string;
  bridgeScript: string;
  pythonPath: string;
  sofficePath: string;
  productVersion: string;
  startTimeoutMs: number;
  limits: SandboxLimits;
}

export interface OfficeJob {
  input: string;
  output: string;
  filter: string;
  filterOptions?: string;
}

interface BridgeReply {
  id?: number;
  event?: string;
  pid?: number;
  ok?: boolean;
  error?: 'load_failed' | 'export_failed' | 'bridge_lost';
  message?: string;
}

const STDERR_KEEP = 8 * 1024;

/**
 * One warm soffice and the python3-uno bridge that drives it, as one sandboxed process group. It is
 * single-use: after a failure, a timeout or N conversions the pool drops it and starts a new one with a
 * fresh profile (so nothing a document did to the profile outlives it).
 */
export class OfficeProcess {
  private child: SandboxedProcess | undefined;
  private nextId = 1;
  private pending = new Map<number, (reply: BridgeReply) => void>();
  private stderrTail = '';
  private exited = false;
  /** Conversions this process has run; the pool retires it at the limit. */
  conversions = 0;
  /** The soffice pid (inside the group) once ready; for tests and logs. */
  sofficePid: number | undefined;

  constructor(
    private readonly runner: ProcessRunner,
    private readonly settings: OfficeProcessSettings,
  ) {}

  get profileDir(): string {
    return join(this.settings.dir, 'profile');
  }

  get ioDir(): string {
    return join(this.settings.dir, 'io');
  }

  /** The bridge's pid = the process group id. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  get isAlive(): boolean {
    return this.child !== undefined && !this.exited;
  }

  async start(): Promise<void> {
    await rm(this.settings.dir, { recursive: true, force: true });
    await mkdir(join(this.profileDir, 'user'), { recursive: true, mode: 0o700 });
    await mkdir(this.ioDir, { recursive: true, mode: 0o700 });
    await writeFile(
      join(this.profileDir, 'user', 'registrymodifications.xcu'),
      registryModifications({ productVersion: this.settings.productVersion }),
    );

    const child = this.runner.spawn({
      command: this.settings.pythonPath,
      args: [
        this.settings.bridgeScript,
        this.settings.sofficePath,
        this.profileDir,
        this.settings.pipeName,
        String(this.settings.startTimeoutMs),
      ],
      limits: this.settings.limits,
      env: cleanEnvironment(this.profileDir, { SAL_USE_VCLPLUGIN: 'svp', PYTHONDONTWRITEBYTECODE: '1' }),
      cwd: this.ioDir,
    });
    this.child = child;
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_KEEP);
    });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new ConversionError('unavailable', `soffice did not start within ${this.settings.startTimeoutMs} ms`)),
        this.settings.startTimeoutMs + 2_000,
      );
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        let reply: BridgeReply;
        try {
          reply = JSON.parse(line) as BridgeReply;
        } catch {
          return; // not ours; the bridge writes only JSON to stdout
        }
        if (reply.event === 'ready') {
          clearTimeout(timer);
          this.sofficePid = reply.pid;
          resolve();
        } else if (reply.id !== undefined) {
          this.pending.get(reply.id)?.(reply);
          this.pending.delete(reply.id);
        }
      });
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(
          new ConversionError('unavailable', `cannot start the office bridge: ${error.message}`, { cause: error }),
        );
      });
      child.on('exit', (code, signal) => {
        this.exited = true;
        clearTimeout(timer);
        // Whatever soffice left behind in the group goes with it.
        this.runner.killGroup(child);
        const message = `office process exited (${code ?? signal}): ${this.diagnostics()}`;
        reject(new ConversionError('unavailable', message));
        for (const [, settle] of this.pending) settle({ ok: false, error: 'bridge_lost', message });
        this.pending.clear();
      });
    });
    try {
      await ready;
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** One conversion; the caller owns the timeout and kills this process when it fires. */
  convert(job: OfficeJob): Promise<void> {
    const child = this.child;
    if (!child || this.exited)
      return Promise.reject(new ConversionError('process_crashed', 'office process is not running'));
    const id = this.nextId++;
    this.conversions++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, (reply) => {
        if (reply.ok) return resolve();
        if (reply.error === 'load_failed')
          return reject(
            new ConversionError(
              'corrupt_document',
              `LibreOffice could not open the file: ${reply.message ?? ''}`.trim(),
            ),
          );
        if (reply.error === 'export_failed')
          return reject(
            new ConversionError('invalid_output', `LibreOffice could not export a PDF: ${reply.message ?? ''}`.trim()),
          );
        reject(new ConversionError('process_crashed', reply.message ?? 'office process died'));
      });
      child.stdin!.write(`${JSON.stringify({ id, ...job })}\n`, (error) => {
        if (error) {
          this.pending.delete(id);
          reject(new ConversionError('process_crashed', `office bridge stdin: ${error.message}`, { cause: error }));
        }
      });
    });
  }

  /** SIGKILL to the whole group (bridge, oosplash, soffice.bin), then the directory goes. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child && !this.exited) {
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      this.runner.killGroup(child);
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    } else if (child) {
      this.runner.killGroup(child);
    }
    await rm(this.settings.dir, { recursive: true, force: true }).catch(() => undefined);
  }

  diagnostics(): string {
    return this.stderrTail
      .split('\n')
      .filter((line) => line.trim() && !line.includes('javaldx'))
      .slice(-5)
      .join(' | ');
  }
}
