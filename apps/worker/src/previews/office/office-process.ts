import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ConversionError } from '../conversion.error';
import {
  cleanEnvironment,
  SANDBOX_UIDS,
  type ProcessRunner,
  type SandboxedProcess,
  type SandboxIdentity,
  type SandboxLimits,
} from '../sandbox/sandbox';
import { registryModifications } from './office-profile';

export interface OfficeProcessSettings {
  /**
   * This member's directory, the worker's: profile/ and io/ beneath it are the member's own (its uid in `uid`
   * mode, its only writable places under Landlock) and are wiped on every start.
   */
  dir: string;
  /** The pool slot: its uid in `uid` mode. */
  slot: number;
  /** Unique among all members of all pools on the machine, and unguessable (LibreOffice pipes live in /tmp). */
  pipeName: string;
  bridgeScript: string;
  pythonPath: string;
  sofficePath: string;
  productVersion: string;
  /** The installation's build id (program/setuprc), when known: see buildIdOf. */
  buildId: string | null;
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

/** LibreOffice's single-instance pipes in /tmp (`OSL_PIPE_[uid_]SingleOfficeIPC_<hash of the profile URL>`). */
async function singleInstancePipes(): Promise<Set<string>> {
  const names = await readdir('/tmp').catch(() => [] as string[]);
  return new Set(names.filter((name) => name.startsWith('OSL_PIPE_') && name.includes('SingleOfficeIPC_')));
}

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
  /** Who the bridge and soffice run as, and what they may touch. */
  readonly identity: SandboxIdentity;
  /** Single-instance pipes in /tmp that appeared with this member's start. */
  private pipes: string[] = [];

  constructor(
    private readonly runner: ProcessRunner,
    private readonly settings: OfficeProcessSettings,
  ) {
    this.identity = {
      uidOffset: SANDBOX_UIDS.officeSlot(settings.slot),
      writable: [this.profileDir, this.ioDir],
      readable: [settings.bridgeScript],
      tmpSockets: true,
    };
  }

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

  /**
   * Removes the pipes soffice made in /tmp (Landlock lets it make them, not remove them): the accept pipe, named
   * after pipeName (`OSL_PIPE_[uid_]name[-rN]`), and the single-instance pipe that appeared with its start.
   */
  private async removePipes(): Promise<void> {
    const names = await readdir('/tmp').catch(() => [] as string[]);
    const mine = names.filter(
      (name) => name.startsWith('OSL_PIPE_') && (name.includes(this.settings.pipeName) || this.pipes.includes(name)),
    );
    await Promise.all(mine.map((name) => rm(join('/tmp', name), { force: true }).catch(() => undefined)));
  }

  async start(): Promise<void> {
    await rm(this.settings.dir, { recursive: true, force: true });
    await this.runner.makeSharedDir(this.settings.dir);
    await this.runner.makeOwnDir(this.profileDir, this.identity);
    await this.runner.makeOwnDir(join(this.profileDir, 'user'), this.identity);
    await this.runner.makeOwnDir(this.ioDir, this.identity);
    await this.runner.writeInto(
      join(this.profileDir, 'user', 'registrymodifications.xcu'),
      registryModifications({ productVersion: this.settings.productVersion }),
      this.identity,
    );
    if (this.settings.buildId) {
      await this.runner.makeOwnDir(join(this.profileDir, 'user', 'extensions'), this.identity);
      await this.runner.writeInto(
        join(this.profileDir, 'user', 'extensions', 'buildid'),
        this.settings.buildId,
        this.identity,
      );
    }
    const pipesBefore = await singleInstancePipes();

    const child = this.runner.spawn({
      command: this.settings.pythonPath,
      args: [
        this.settings.bridgeScript,
        this.settings.sofficePath,
        this.profileDir,
        this.settings.pipeName,
        String(this.settings.startTimeoutMs),
      ],
      identity: this.identity,
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
    // soffice's single-instance pipe (named after the profile) appeared with this start: removed at stop.
    const pipesAfter = await singleInstancePipes();
    this.pipes = [...pipesAfter].filter((name) => !pipesBefore.has(name));
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
    await this.removePipes();
  }

  diagnostics(): string {
    return this.stderrTail
      .split('\n')
      .filter((line) => line.trim() && !line.includes('javaldx'))
      .slice(-5)
      .join(' | ');
  }
}
