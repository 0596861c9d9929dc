import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { stackEnv, TOPOLOGY } from './env';

const ROOT = resolve(__dirname, '../..');
const LOG_DIR = join(ROOT, '.data', 'test-logs');
/** As in the images (infra/docker/Dockerfile): glibc keeps up to 32 MiB of freed heap, not faulting it in again. */
const SERVICE_GLIBC_TUNABLES =
  'glibc.malloc.trim_threshold=33554432:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2';

export type ServiceName = 'storage' | 'gateway' | 'worker';
const PORT_OFFSET: Record<ServiceName, number> = { gateway: 0, storage: 1, worker: 2 };
/** test/ha/replicas.sh: replica i of a service listens on the service's balanced port + 10 × i. */
const REPLICAS = [1, 2] as const;

/**
 * The three built services as real processes (dist/), on ports from `portBase`. In the `ha` topology
 * (UHP_E2E_TOPOLOGY, see env.ts) two replicas of each, behind HAProxy on the same ports: what acts on one
 * process (pid, pause, kill, terminate, restart) refuses there.
 */
export class Stack {
  private readonly processes = new Map<ServiceName, ChildProcess>();
  readonly env: Record<string, string>;
  readonly isReplicated = TOPOLOGY === 'ha';
  private replicasStarted = false;

  constructor(
    readonly portBase: number,
    overrides: Record<string, string> = {},
  ) {
    this.env = stackEnv(portBase, overrides);
  }

  /** The own port of each process of a service (its /metrics counts what that process did). */
  replicaPorts(name: ServiceName): number[] {
    return this.isReplicated ? REPLICAS.map((i) => this.port(name) + 10 * i) : [this.port(name)];
  }

  /** The log file of each process of a service. */
  logFiles(name: ServiceName): string[] {
    return this.isReplicated
      ? REPLICAS.map((i) => join(this.replicasDir, `${name}-${i}.log`))
      : [join(LOG_DIR, `${name}-${this.portBase}.log`)];
  }

  private get replicasDir(): string {
    return join(LOG_DIR, `ha-${this.portBase}`);
  }

  /** test/ha/replicas.sh with this stack's environment. */
  private async replicas(command: 'start' | 'stop', names: ServiceName[] = []): Promise<void> {
    try {
      await promisify(execFile)('bash', [join(ROOT, 'test/ha/replicas.sh'), command, ...names], {
        cwd: ROOT,
        env: { ...process.env, ...this.env, UHP_HA_DIR: this.replicasDir },
        timeout: 240_000,
      });
    } catch (error) {
      const failed = error as Error & { stdout?: string; stderr?: string };
      throw new Error(`replicas.sh ${command} failed: ${failed.stderr || failed.stdout || failed.message}`, {
        cause: error,
      });
    }
  }

  private refuseReplicated(what: string): void {
    if (this.isReplicated)
      throw new Error(
        `Stack.${what} acts on one process: the ha topology (UHP_E2E_TOPOLOGY=ha) runs two of each. ` +
          'Run this file in the pgbouncer topology (test/ha/run.sh lists the files that do).',
      );
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.portBase}`;
  }

  port(name: ServiceName): number {
    return this.portBase + PORT_OFFSET[name];
  }

  async start(names: ServiceName[] = ['storage', 'gateway', 'worker']): Promise<void> {
    mkdirSync(LOG_DIR, { recursive: true });
    if (this.isReplicated) {
      // One HAProxy serves the stack's ports: a second start would need it to learn other backends.
      if (this.replicasStarted) throw new Error('Stack.start: the ha topology starts its services once');
      this.replicasStarted = true;
      return this.replicas('start', names);
    }
    for (const name of names) {
      const log = createWriteStream(join(LOG_DIR, `${name}-${this.portBase}.log`), { flags: 'a' });
      const child = spawn(process.execPath, ['--enable-source-maps', join(ROOT, 'dist/apps', name, 'src/main.js')], {
        cwd: ROOT,
        env: { GLIBC_TUNABLES: SERVICE_GLIBC_TUNABLES, ...process.env, ...this.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.pipe(log);
      child.stderr!.pipe(log);
      this.processes.set(name, child);
      await this.waitReady(name, child);
    }
  }

  private async waitReady(name: ServiceName, child: ChildProcess): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null)
        throw new Error(`${name} exited with ${child.exitCode}; see .data/test-logs/${name}-${this.portBase}.log`);
      try {
        const res = await fetch(`http://127.0.0.1:${this.port(name)}/readyz`);
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      await sleep(200);
    }
    throw new Error(`${name} not ready within 60 s; see .data/test-logs/${name}-${this.portBase}.log`);
  }

  /** The pid of a running service (for its RSS in /proc). */
  pid(name: ServiceName): number {
    this.refuseReplicated('pid');
    const pid = this.processes.get(name)?.pid;
    if (pid === undefined) throw new Error(`${name} is not running`);
    return pid;
  }

  /** Stops one service (SIGTERM) and starts it again with these variables changed. */
  async restart(name: ServiceName, overrides: Record<string, string> = {}): Promise<void> {
    this.refuseReplicated('restart');
    const child = this.processes.get(name);
    if (child && child.exitCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await exited;
    }
    this.processes.delete(name);
    Object.assign(this.env, overrides);
    await this.start([name]);
  }

  /** Freezes one service (SIGSTOP), as a stalled process: its connections stay open and nothing answers. */
  pause(name: ServiceName): void {
    this.refuseReplicated('pause');
    process.kill(this.pid(name), 'SIGSTOP');
  }

  resume(name: ServiceName): void {
    this.refuseReplicated('resume');
    process.kill(this.pid(name), 'SIGCONT');
  }

  /** Sends SIGTERM to one service and resolves with its exit code once it has stopped by itself. */
  async terminate(name: ServiceName): Promise<number | null> {
    this.refuseReplicated('terminate');
    const child = this.processes.get(name);
    if (!child) throw new Error(`${name} is not running`);
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    child.kill('SIGTERM');
    const code = await exited;
    this.processes.delete(name);
    return code;
  }

  /** Kills one service at once (SIGKILL), as a crash would. */
  kill(name: ServiceName): void {
    this.refuseReplicated('kill');
    this.processes.get(name)?.kill('SIGKILL');
    this.processes.delete(name);
  }

  async stop(): Promise<void> {
    if (this.isReplicated) {
      if (this.replicasStarted) await this.replicas('stop');
      this.replicasStarted = false;
      return;
    }
    await Promise.all(
      [...this.processes.entries()].map(async ([name, child]) => {
        if (child.exitCode !== null) return;
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
        this.processes.delete(name);
      }),
    );
  }
}
