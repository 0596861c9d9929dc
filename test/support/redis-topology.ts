import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { testPort } from './env';

const ROOT = resolve(__dirname, '../..');
const HOST = '127.0.0.1';
export const SENTINEL_MASTER = 'mymaster';

/** One command to one server on a connection of its own: nothing is queued or retried behind the caller's back. */
async function ask(port: number, password: string, command: string, ...args: Array<string | number>): Promise<any> {
  const client = new Redis({
    host: HOST,
    port,
    password,
    lazyConnect: true,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command, ...args);
  } finally {
    client.disconnect();
  }
}

/** Whether a process runs: a killed one stays a zombie until whoever adopted it reaps it, which can take seconds. */
function isRunning(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Polls `probe` until it returns true, or fails naming what it waited for and the last error. */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await probe()) return;
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  throw new Error(`${what}: not so after ${timeoutMs} ms${last ? ` (last error: ${String(last)})` : ''}`);
}

/**
 * One redis-server (a data node or a sentinel) from its own configuration file, which it may rewrite (sentinels
 * and promoted replicas do), with its pid file and log beside it.
 */
class RedisProcess {
  private child?: ChildProcess;

  constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  private get pidFile(): string {
    return join(this.dir, `${this.port}.pid`);
  }

  start(settings: string[], mode: 'data' | 'sentinel'): void {
    const conf = join(this.dir, `${this.port}.conf`);
    const common = [
      `port ${this.port}`,
      `bind ${HOST}`,
      'daemonize no',
      `pidfile ${this.pidFile}`,
      `logfile ${join(this.dir, `${this.port}.log`)}`,
      `dir ${this.dir}`,
    ];
    writeFileSync(conf, [...common, ...settings, ''].join('\n'));
    this.child = spawn('redis-server', mode === 'sentinel' ? [conf, '--sentinel'] : [conf], { stdio: 'ignore' });
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;
  }

  /**
   * Kills a server an earlier run left on this port (its test process crashed before teardown): only the one its
   * pid file names, and only while that pid is still a redis-server on this port.
   */
  async killStray(): Promise<void> {
    if (!existsSync(this.pidFile)) return;
    const pid = Number(readFileSync(this.pidFile, 'utf8').trim());
    let title: string;
    try {
      title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return; // gone already
    }
    if (!title.startsWith('redis-server') || !title.includes(`:${this.port}`)) return;
    process.kill(pid, 'SIGKILL');
    await until(`stray redis-server ${pid} gone`, async () => !isRunning(pid), 5_000);
  }

  /** Whether anything answers a Redis PING here, with or without our password. */
  answers(password: string): Promise<boolean> {
    return ask(this.port, password, 'PING').then(
      () => true,
      (error: Error) => /NOAUTH|WRONGPASS|invalid password/i.test(error.message),
    );
  }
}

/** The processes of one topology, all under `.data/test-redis-<name>`, cleared at each start. */
abstract class Topology {
  protected readonly dir: string;
  protected readonly processes: RedisProcess[];

  protected constructor(name: string, ports: number[]) {
    this.dir = join(ROOT, '.data', `test-redis-${name}`);
    this.processes = ports.map((port) => new RedisProcess(port, this.dir));
  }

  /** Kills what an earlier run left, refuses a port someone else holds, and starts from an empty folder. */
  protected async prepare(password: string): Promise<void> {
    await Promise.all(this.processes.map((node) => node.killStray()));
    for (const node of this.processes)
      if (await node.answers(password))
        throw new Error(`port ${node.port} already has a Redis that is not this topology's own`);
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
  }

  /** Stops every process; safe after a failed start, and more than once. The logs stay until the next start. */
  async stop(): Promise<void> {
    await Promise.all(this.processes.map((node) => node.stop()));
  }
}

const DATA_PASSWORD = 'test-redis-data-password';
const SENTINEL_PASSWORD = 'test-redis-sentinel-password';

/** Settings every data node gets: nothing on disk, and a full sync that starts at once rather than after 5 s. */
const DATA_NODE = ['save ""', 'appendonly no', 'repl-diskless-sync yes', 'repl-diskless-sync-delay 0'];

/**
 * A Redis Sentinel deployment on loopback: one primary, one replica, three sentinels (quorum 2) watching them as
 * `mymaster`. Sentinels and data nodes have different passwords, so a client must use both credentials right.
 */
export class RedisSentinelTopology extends Topology {
  readonly dataPassword = DATA_PASSWORD;
  readonly sentinelPassword = SENTINEL_PASSWORD;
  private primaryAt: RedisProcess;
  private replicaAt: RedisProcess;

  constructor(basePort = testPort(16400)) {
    super('sentinel', [basePort, basePort + 1, basePort + 2, basePort + 3, basePort + 4]);
    [this.primaryAt, this.replicaAt] = this.processes as [RedisProcess, RedisProcess];
  }

  private get sentinelNodes(): RedisProcess[] {
    return this.processes.slice(2);
  }

  /** The primary as the sentinels last agreed. */
  primary(): { host: string; port: number } {
    return { host: HOST, port: this.primaryAt.port };
  }

  replica(): { host: string; port: number } {
    return { host: HOST, port: this.replicaAt.port };
  }

  /**
   * The variables a service needs to find the primary through the sentinels. REDIS_URL's host and port are
   * ignored in sentinel mode: it points where nothing listens, so a client that used them would fail.
   */
  stackEnv(): Record<string, string> {
    return {
      REDIS_URL: `redis://${HOST}:1/0`,
      REDIS_PASSWORD: this.dataPassword,
      REDIS_SENTINELS: this.sentinelNodes.map((node) => `${HOST}:${node.port}`).join(','),
      REDIS_SENTINEL_MASTER: SENTINEL_MASTER,
      REDIS_SENTINEL_PASSWORD: this.sentinelPassword,
    };
  }

  async start(): Promise<void> {
    await this.prepare(this.dataPassword);
    const credentials = [`requirepass ${this.dataPassword}`, `masterauth ${this.dataPassword}`];
    this.primaryAt.start([...DATA_NODE, ...credentials], 'data');
    this.replicaAt.start([...DATA_NODE, ...credentials, `replicaof ${HOST} ${this.primaryAt.port}`], 'data');
    // Listed in the primary's INFO before the sentinels first read it, so they learn of it at once.
    await this.replicaInSync();
    for (const sentinel of this.sentinelNodes)
      sentinel.start(
        [
          `requirepass ${this.sentinelPassword}`,
          // What a sentinel says to the other sentinels (they share one password).
          `sentinel sentinel-pass ${this.sentinelPassword}`,
          `sentinel monitor ${SENTINEL_MASTER} ${HOST} ${this.primaryAt.port} 2`,
          `sentinel auth-pass ${SENTINEL_MASTER} ${this.dataPassword}`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} 3000`,
          `sentinel failover-timeout ${SENTINEL_MASTER} 10000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
        ],
        'sentinel',
      );
    await until('every sentinel answers', async () => {
      for (const sentinel of this.sentinelNodes) await this.askSentinel(sentinel, 'PING');
      return true;
    });
    // A sentinel reads its replicas' INFO every 10 s by default, so a demoted primary would go on taking
    // writes for up to 18 s before it is made a replica: a tenth of that keeps each failover to a few seconds.
    for (const sentinel of this.sentinelNodes)
      await this.askSentinel(sentinel, 'SENTINEL', 'DEBUG', 'info-period', 1_000, 'publish-period', 500);
    await this.readyToFailOver();
  }

  /**
   * `SENTINEL FAILOVER mymaster`: resolves once every sentinel names the replica as the primary and it answers
   * `ROLE` as master. The old primary is made a replica of it by the sentinels a little later, as in production.
   */
  async failover(): Promise<{ from: number; to: number }> {
    const [from, to] = [this.primaryAt, this.replicaAt];
    await this.readyToFailOver();
    await until(`SENTINEL FAILOVER ${SENTINEL_MASTER} accepted`, async () => {
      try {
        await this.askSentinel(this.sentinelNodes[0]!, 'SENTINEL', 'FAILOVER', SENTINEL_MASTER);
        return true;
      } catch (error) {
        // No replica a sentinel trusts yet, or the previous failover still finishing: both pass.
        if (/NOGOODSLAVE|INPROG/.test((error as Error).message)) return false;
        throw error;
      }
    });
    await until(`every sentinel names ${to.port} the primary`, async () => {
      for (const sentinel of this.sentinelNodes) if (!(await this.namesPrimary(sentinel, to.port))) return false;
      const role = (await ask(to.port, this.dataPassword, 'ROLE')) as [string];
      return role[0] === 'master';
    });
    [this.primaryAt, this.replicaAt] = [to, from];
    return { from: from.port, to: to.port };
  }

  private askSentinel(sentinel: RedisProcess, command: string, ...args: Array<string | number>): Promise<any> {
    return ask(sentinel.port, this.sentinelPassword, command, ...args);
  }

  private async namesPrimary(sentinel: RedisProcess, port: number): Promise<boolean> {
    const address = (await this.askSentinel(sentinel, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER)) as
      [string, string] | null;
    return address?.[1] === String(port);
  }

  private async replicaInSync(): Promise<void> {
    await until(`${this.replicaAt.port} a connected replica of ${this.primaryAt.port}`, async () => {
      const role = (await ask(this.replicaAt.port, this.dataPassword, 'ROLE')) as [string, string, number, string];
      return role[0] === 'slave' && role[2] === this.primaryAt.port && role[3] === 'connected';
    });
  }

  /**
   * What `SENTINEL FAILOVER` needs to promote the replica: every sentinel agrees on the primary, knows the other
   * two, and sees the replica as a healthy replica of it (not the demoted primary still saying it is one).
   */
  private async readyToFailOver(): Promise<void> {
    await this.replicaInSync();
    await until(`every sentinel sees ${this.replicaAt.port} as a good replica of ${this.primaryAt.port}`, async () => {
      for (const sentinel of this.sentinelNodes) {
        if (!(await this.namesPrimary(sentinel, this.primaryAt.port))) return false;
        const others = (await this.askSentinel(sentinel, 'SENTINEL', 'SENTINELS', SENTINEL_MASTER)) as unknown[];
        if (others.length !== this.sentinelNodes.length - 1) return false;
        const replicas = (
          (await this.askSentinel(sentinel, 'SENTINEL', 'REPLICAS', SENTINEL_MASTER)) as string[][]
        ).map((fields) => Object.fromEntries(fields.flatMap((_, i) => (i % 2 ? [] : [[fields[i], fields[i + 1]]]))));
        const replica = replicas.find((fields) => fields.port === String(this.replicaAt.port));
        if (replica?.flags !== 'slave' || replica['master-link-status'] !== 'ok') return false;
        if (replica['master-port'] !== String(this.primaryAt.port)) return false;
      }
      return true;
    });
  }
}

const CLUSTER_PASSWORD = 'test-redis-cluster-password';

/**
 * A Redis Cluster on loopback: three primaries, no replicas, joined by `redis-cli --cluster create`. Each node's
 * cluster bus is on its port + 10 (set explicitly: the default, port + 10000, leaves the port range at high slots).
 */
export class RedisClusterTopology extends Topology {
  readonly password = CLUSTER_PASSWORD;

  constructor(basePort = testPort(16410)) {
    super('cluster', [basePort, basePort + 1, basePort + 2]);
  }

  get ports(): number[] {
    return this.processes.map((node) => node.port);
  }

  stackEnv(): Record<string, string> {
    return {
      REDIS_URL: `redis://${HOST}:1/0`,
      REDIS_PASSWORD: this.password,
      REDIS_CLUSTER_NODES: this.ports.map((port) => `${HOST}:${port}`).join(','),
    };
  }

  async start(): Promise<void> {
    await this.prepare(this.password);
    for (const node of this.processes)
      node.start(
        [
          ...DATA_NODE,
          `requirepass ${this.password}`,
          `masterauth ${this.password}`,
          'cluster-enabled yes',
          `cluster-config-file ${join(this.dir, `${node.port}-nodes.conf`)}`,
          `cluster-port ${node.port + 10}`,
          'cluster-node-timeout 5000',
        ],
        'data',
      );
    await until('every cluster node answers', async () => {
      for (const port of this.ports) await this.ask(port, 'PING');
      return true;
    });
    await promisify(execFile)(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...this.ports.map((port) => `${HOST}:${port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      // The password through the environment, not the command line every process can read.
      { env: { ...process.env, REDISCLI_AUTH: this.password }, timeout: 60_000 },
    );
    await until('cluster_state:ok on every node', async () => {
      for (const port of this.ports) {
        const info = (await this.ask(port, 'CLUSTER', 'INFO')) as string;
        if (!/^cluster_state:ok\r?$/m.test(info) || !/^cluster_known_nodes:3\r?$/m.test(info)) return false;
      }
      return true;
    });
  }

  /** One command to one node (no redirection followed). */
  ask(port: number, command: string, ...args: Array<string | number>): Promise<any> {
    return ask(port, this.password, command, ...args);
  }

  /** Every key each primary holds, by SCAN. */
  async keysByNode(): Promise<Map<number, string[]>> {
    const out = new Map<number, string[]>();
    for (const port of this.ports) {
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = (await this.ask(port, 'SCAN', cursor, 'COUNT', 1000)) as [string, string[]];
        keys.push(...batch);
        cursor = next;
      } while (cursor !== '0');
      out.set(port, keys);
    }
    return out;
  }
}
