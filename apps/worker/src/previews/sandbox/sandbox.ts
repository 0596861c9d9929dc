import { spawn, type ChildProcess } from 'node:child_process';

/** A converter process started by the sandbox. */
export type SandboxedProcess = ChildProcess;
import { ConversionError } from '../conversion.error';

/** How a converter process is confined. */
export interface SandboxLimits {
  /** New network namespace: no interface but a downed loopback, so no request leaves, not even to 127.0.0.1. */
  isolateNetwork: boolean;
  /** RLIMIT_AS; omitted for Chromium, whose V8 reserves tens of GB of address space it never touches. */
  addressSpaceBytes?: number;
  /** RLIMIT_FSIZE: a runaway output cannot fill the disk. */
  maxFileBytes?: number;
}

/** The environment every converter process gets: nothing of the worker's (no credentials, no proxies). */
export function cleanEnvironment(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: '/usr/bin:/bin', HOME: home, TMPDIR: home, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', ...extra };
}

/**
 * The argv that runs `command` confined: `unshare --net` (plus `--map-root-user` when not root, which
 * needs unprivileged user namespaces), then `prlimit` with the limits and no core dumps. Both exec in
 * place, so the pid spawned is the converter's and its process group is the converter's tree.
 */
export function sandboxArgv(
  command: string,
  args: readonly string[],
  limits: SandboxLimits,
  isRoot = process.getuid?.() === 0,
): string[] {
  const argv: string[] = [];
  if (limits.isolateNetwork) argv.push('unshare', '--net', ...(isRoot ? [] : ['--map-root-user']), '--');
  argv.push('prlimit', '--core=0');
  if (limits.addressSpaceBytes !== undefined) argv.push(`--as=${limits.addressSpaceBytes}`);
  if (limits.maxFileBytes !== undefined) argv.push(`--fsize=${limits.maxFileBytes}`);
  argv.push('--', command, ...args);
  return argv;
}

export interface SandboxedSpawn {
  command: string;
  args: readonly string[];
  limits: SandboxLimits;
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

/** The one place the preview converters start processes. */
export class ProcessRunner {
  /** A long-lived process in its own process group (detached), stdio piped. */
  spawn(options: SandboxedSpawn): ChildProcess {
    const [head, ...rest] = sandboxArgv(options.command, options.args, options.limits);
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
      const child = this.spawn(options);
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
}
