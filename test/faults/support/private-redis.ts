import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = resolve(__dirname, '../../..');

/**
 * A redis-server of the fault tier's own, on its own port, without persistence: stopping it loses every
 * queue, scheduler and lock, the harshest restart a Redis can have. The shared Redis on 6379 is never touched.
 */
export class PrivateRedis {
  private child?: ChildProcess;
  private readonly dir: string;

  constructor(readonly port: number) {
    this.dir = join(ROOT, '.data', `faults-redis-${port}`);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  async start(): Promise<void> {
    // Stopping it must stop what the services talk to: never adopt a server someone else left on the port.
    if (await this.answers()) throw new Error(`port ${this.port} already has a Redis (left by a killed run?)`);
    mkdirSync(this.dir, { recursive: true });
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (await this.answers()) return;
      await sleep(50);
    }
    throw new Error(`redis-server on ${this.port} did not start`);
  }

  /** Freezes it (SIGSTOP), as a stalled server: connections stay open and commands get no answer. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** Stops it at once (SIGKILL): clients see their connections reset and then refused. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;
    this.child = undefined;
  }

  destroy(): Promise<void> {
    return this.stop().then(() => rmSync(this.dir, { recursive: true, force: true }));
  }

  private answers(): Promise<boolean> {
    return new Promise((done) => {
      const socket = connect(this.port, '127.0.0.1', () => socket.write('PING\r\n'));
      socket.once('data', (data) => {
        socket.destroy();
        done(data.toString().startsWith('+PONG'));
      });
      socket.once('error', () => done(false));
    });
  }
}
