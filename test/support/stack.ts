import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stackEnv } from './env';

const ROOT = resolve(__dirname, '../..');
const LOG_DIR = join(ROOT, '.data', 'test-logs');
/** As in the images (infra/docker/Dockerfile): glibc keeps up to 32 MiB of freed heap, not faulting it in again. */
const SERVICE_GLIBC_TUNABLES =
  'glibc.malloc.trim_threshold=33554432:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2';

export type ServiceName = 'storage' | 'gateway' | 'worker';
const PORT_OFFSET: Record<ServiceName, number> = { gateway: 0, storage: 1, worker: 2 };

/** The three built services as real processes (dist/), on ports from `portBase`. */
export class Stack {
  private readonly processes = new Map<ServiceName, ChildProcess>();
  readonly env: Record<string, string>;

  constructor(
    readonly portBase: number,
    overrides: Record<string, string> = {},
  ) {
    this.env = stackEnv(portBase, overrides);
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.portBase}`;
  }

  port(name: ServiceName): number {
    return this.portBase + PORT_OFFSET[name];
  }

  async start(names: ServiceName[] = ['storage', 'gateway', 'worker']): Promise<void> {
    mkdirSync(LOG_DIR, { recursive: true });
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
    const pid = this.processes.get(name)?.pid;
    if (pid === undefined) throw new Error(`${name} is not running`);
    return pid;
  }

  /** Stops one service (SIGTERM) and starts it again with these variables changed. */
  async restart(name: ServiceName, overrides: Record<string, string> = {}): Promise<void> {
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
    process.kill(this.pid(name), 'SIGSTOP');
  }

  resume(name: ServiceName): void {
    process.kill(this.pid(name), 'SIGCONT');
  }

  /** Sends SIGTERM to one service and resolves with its exit code once it has stopped by itself. */
  async terminate(name: ServiceName): Promise<number | null> {
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
    this.processes.get(name)?.kill('SIGKILL');
    this.processes.delete(name);
  }

  async stop(): Promise<void> {
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
