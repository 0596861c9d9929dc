import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:fs';
import { chmod, copyFile, lchown, mkdir, open, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ConversionError } from '../conversion.error';

/** A converter process started by the sandbox. */
export type SandboxedProcess = ChildProcess;

/** How converter processes are kept off the network. */
export type NetworkIsolation = 'namespace' | 'seccomp' | 'none';
/** How a converter process is kept out of other jobs' files and the worker's own. */
export type FilesystemIsolation = 'uid' | 'landlock' | 'none';

/**
 * The confinement of every converter process of this worker, decided once at start by trying each mode
 * in a probe process (isolation.ts), strongest first:
 * - network `namespace`: a new network namespace with nothing but a downed loopback (`unshare --net`, plus a
 *   user namespace when the worker is not root); `seccomp`: a seccomp filter refuses every socket but AF_UNIX
 *   (and Landlock refuses TCP bind/connect where its ABI has it); `none`: the deployment must supply it.
 * - filesystem `uid`: each converter runs as a uid of its own (the worker is root), sees its own directories
 *   only, and Landlock (when the kernel has it) confines it further; `landlock`: same uid as the worker,
 *   Landlock alone keeps it to its own directories; `none`.
 */
export interface IsolationMode {
  network: NetworkIsolation;
  filesystem: FilesystemIsolation;
  /** The Landlock ABI every converter is confined with (0: none). */
  landlockAbi: number;
  /** Chromium keeps its own sandbox; false: `--no-sandbox`, inside the confinement above. */
  chromiumSandbox: boolean;
  /** The network namespace comes with a user namespace (the worker is not root). */
  userNamespace: boolean;
  /** The first of this worker's converter uids (`uid` mode; see SANDBOX_UIDS). */
  uidBase: number;
  /** Set when converters must not run at all (PREVIEW_ISOLATE_NETWORK=required and no mode isolates). */
  refused?: string;
  /** Why stronger modes were not taken, and later changes (Chromium's sandbox refused at launch). */
  notes: string[];
}

/**
 * Offsets from the base uid: one uid per LibreOffice pool slot (up to 16), Chromium, the tools, the probe, the
 * image renderer.
 */
export const SANDBOX_UIDS = {
  officeSlot: (slot: number) => slot,
  chromium: 16,
  tools: 17,
  probe: 18,
  image: 19,
} as const;
/** How many uids from the base a worker uses. */
export const SANDBOX_UID_COUNT = 20;

/** Who a converter process runs as, and what it may touch. */
export interface SandboxIdentity {
  /** Offset from the base uid (SANDBOX_UIDS); used in `uid` mode. */
  uidOffset: number;
  /** The directories it may write (its own); under Landlock the only ones it can read besides the system. */
  writable: readonly string[];
  /** Files or directories it may also read (the UNO bridge script). */
  readable?: readonly string[];
  /** It may create Unix sockets in /tmp (LibreOffice puts its pipe there whatever TMPDIR says). */
  tmpSockets?: boolean;
  /** It may write under /proc (Chromium's own sandbox writes the uid maps of its user namespaces). */
  procWrite?: boolean;
}

export interface SandboxLimits {
  /** RLIMIT_AS; omitted for Chromium, whose V8 reserves tens of GB of address space it never touches. */
  addressSpaceBytes?: number;
  /** RLIMIT_FSIZE: a runaway output cannot fill the disk. */
  maxFileBytes?: number;
}

/** The launcher (confine.py, shipped beside this file as a Nest asset) and the python3 that runs it. */
export interface LauncherSettings {
  pythonPath: string;
  launcherPath: string;
}

/** The environment every converter process gets: nothing of the worker's (no credentials, no proxies). */
export function cleanEnvironment(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: '/usr/bin:/bin', HOME: home, TMPDIR: home, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', ...extra };
}

export interface ConfinedCommand {
  command: string;
  args: readonly string[];
  identity: SandboxIdentity;
  limits: SandboxLimits;
  /** Launcher options before the command (the start-up probe's `--self-test …`). */
  launcherArgs?: readonly string[];
}

/** The uid a converter of `identity` runs as in `uid` mode. */
export const uidOf = (mode: Pick<IsolationMode, 'uidBase'>, identity: Pick<SandboxIdentity, 'uidOffset'>) =>
  mode.uidBase + identity.uidOffset;

/**
 * The argv that runs a command confined: `unshare --net` (namespace mode), then the launcher, which sets the
 * limits, drops to the converter's uid, applies Landlock and the seccomp filter, and execs the command. Each
 * step execs in place, so the pid spawned is the converter's and its process group is the converter's tree.
 */
export function sandboxArgv(spec: ConfinedCommand, mode: IsolationMode, launcher: LauncherSettings): string[] {
  const argv: string[] = [];
  if (mode.network === 'namespace')
    argv.push('unshare', '--net', ...(mode.userNamespace ? ['--user', '--map-current-user'] : []), '--');
  argv.push(launcher.pythonPath, '-I', '-S', launcher.launcherPath);
  if (mode.filesystem === 'uid') {
    const uid = String(uidOf(mode, spec.identity));
    argv.push('--uid', uid, '--gid', uid);
  }
  if (mode.landlockAbi > 0) {
    argv.push('--landlock');
    for (const dir of spec.identity.writable) argv.push('--rw', dir);
    for (const path of spec.identity.readable ?? []) argv.push('--ro', path);
    if (spec.identity.tmpSockets) argv.push('--tmp-sockets');
    if (spec.identity.procWrite) argv.push('--proc-write');
    if (mode.network !== 'none') argv.push('--no-tcp');
  }
  if (mode.network === 'seccomp') argv.push('--seccomp-nonet');
  if (spec.limits.addressSpaceBytes !== undefined) argv.push('--as', String(spec.limits.addressSpaceBytes));
  if (spec.limits.maxFileBytes !== undefined) argv.push('--fsize', String(spec.limits.maxFileBytes));
  argv.push(...(spec.launcherArgs ?? []), '--', spec.command, ...spec.args);
  return argv;
}

export interface SandboxedSpawn extends ConfinedCommand {
  env: Record<string, string>;
  cwd: string;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const OUTPUT_KEEP = 64 * 1024;

/**
 * The one place the preview converters start processes, all of them confined the same way (the mode decided at
 * start), and the one place that moves files into and out of a converter's directories.
 */
export class ProcessRunner {
  constructor(
    readonly mode: IsolationMode,
    readonly launcher: LauncherSettings,
  ) {}

  /** The argv of a confined command in this worker's mode (Chromium's launcher script execs it). */
  argv(spec: ConfinedCommand): string[] {
    this.assertAllowed();
    return sandboxArgv(spec, this.mode, this.launcher);
  }

  /** Throws when converters must not run here (PREVIEW_ISOLATE_NETWORK=required and nothing isolates). */
  assertAllowed(): void {
    if (this.mode.refused) throw new ConversionError('unavailable', this.mode.refused);
  }

  /** A long-lived process in its own process group (detached), stdio piped. */
  spawn(options: SandboxedSpawn): ChildProcess {
    const [head, ...rest] = this.argv(options);
    return spawn(head!, rest, { cwd: options.cwd, env: options.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  }

  /** SIGKILL to the whole group: soffice ignored SIGTERM once, and its children must go with it. */
  killGroup(child: ChildProcess): void {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  /** A short-lived process (qpdf, probes) with a wall-clock limit that kills its group. */
  run(options: SandboxedSpawn & { timeoutMs: number; signal?: AbortSignal }): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = this.spawn(options);
      } catch (error) {
        reject(error);
        return;
      }
      child.stdin?.end();
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        if (stdout.length < OUTPUT_KEEP) stdout += chunk.toString('utf8');
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        if (stderr.length < OUTPUT_KEEP) stderr += chunk.toString('utf8');
      });
      let failure: ConversionError | undefined;
      const stop = (error: ConversionError) => {
        failure ??= error;
        this.killGroup(child);
      };
      const timer = setTimeout(
        () => stop(new ConversionError('timeout', `${options.command} ran past ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      const onAbort = () => stop(new ConversionError('aborted', 'conversion aborted'));
      options.signal?.addEventListener('abort', onAbort, { once: true });
      child.on('error', (error) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        reject(
          new ConversionError('unavailable', `cannot start ${options.command}: ${error.message}`, { cause: error }),
        );
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (failure) reject(failure);
        else resolve({ code, signal, stdout, stderr });
      });
    });
  }

  /**
   * A directory of the worker's on the way to converters' own (work dir, pool dirs): converters may pass
   * through it (`uid` mode: 0711, no listing) but not change it, so a converter cannot swap its own
   * directory for a link to somewhere else.
   */
  async makeSharedDir(path: string): Promise<void> {
    await mkdir(path, { recursive: true, mode: 0o700 });
    await chmod(path, this.mode.filesystem === 'uid' ? 0o711 : 0o700);
  }

  /** A fresh directory owned by the converter of `identity` (`uid` mode), private to it. */
  async makeOwnDir(path: string, identity: Pick<SandboxIdentity, 'uidOffset'>): Promise<void> {
    await rm(path, { recursive: true, force: true });
    await mkdir(path, { recursive: true, mode: 0o700 });
    if (this.mode.filesystem === 'uid') {
      const uid = uidOf(this.mode, identity);
      await lchown(path, uid, uid);
    }
  }

  /**
   * Copies a file into a converter's directory: a new file (a link or file planted at `target` is refused, never
   * followed), then handed to the converter's uid.
   */
  async copyInto(source: string, target: string, identity: Pick<SandboxIdentity, 'uidOffset'>): Promise<void> {
    await rm(target, { force: true });
    await copyFile(source, target, constants.COPYFILE_EXCL);
    if (this.mode.filesystem === 'uid') {
      const uid = uidOf(this.mode, identity);
      await lchown(target, uid, uid);
    }
  }

  /** Writes new content into a converter's directory, as copyInto does. */
  async writeInto(target: string, content: string | Buffer, identity: Pick<SandboxIdentity, 'uidOffset'>) {
    await rm(target, { force: true });
    const handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(content);
      if (this.mode.filesystem === 'uid') {
        const uid = uidOf(this.mode, identity);
        await handle.chown(uid, uid);
      }
    } finally {
      await handle.close();
    }
  }

  /**
   * Copies what a converter wrote out of its directory into the worker's: only a regular file, never through a
   * link the converter may have put there in its place (it would name another job's file).
   */
  async copyOut(source: string, target: string): Promise<void> {
    const handle = await open(source, constants.O_RDONLY | constants.O_NOFOLLOW).catch((error: unknown) => {
      throw new ConversionError('invalid_output', 'the converter wrote no readable output', { cause: error });
    });
    try {
      if (!(await handle.stat()).isFile())
        throw new ConversionError('invalid_output', 'the converter output is not a regular file');
      await mkdir(dirname(target), { recursive: true });
      await pipeline(
        handle.createReadStream({ autoClose: false }),
        (await open(target, 'wx', 0o600)).createWriteStream(),
      );
    } finally {
      await handle.close();
    }
  }
}
