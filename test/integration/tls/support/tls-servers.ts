import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect } from 'node:tls';

/**
 * Private TLS servers for test/integration/tls: a CA made with openssl, and a PostgreSQL (initdb/pg_ctl) and a
 * redis-server that speak only TLS with certificates it signed. Everything lives in one temporary directory;
 * `stop()` kills the servers and removes it.
 */

export const ROOT = resolve(__dirname, '../../../..');

/** The hosts each server certificate names; the servers also listen on OTHER_LOOPBACK, which it does not name. */
export const CERTIFIED_HOST = '127.0.0.1';
export const OTHER_LOOPBACK = '127.0.0.2';

const POSTGRES_BIN = (() => {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort() : [];
  const bin = versions.length > 0 ? `/usr/lib/postgresql/${versions[versions.length - 1]}/bin` : undefined;
  return bin && existsSync(`${bin}/initdb`) && existsSync(`${bin}/pg_ctl`) ? bin : undefined;
})();

/** Fails with every missing tool and how to install it: a run without them must not pass by skipping. */
export function requireTools(): void {
  const missing: string[] = [];
  if (spawnSync('openssl', ['version']).status !== 0) missing.push('openssl (apt-get install openssl)');
  if (spawnSync('redis-server', ['--version']).status !== 0)
    missing.push('redis-server (apt-get install redis-server)');
  if (!POSTGRES_BIN) missing.push('initdb/pg_ctl under /usr/lib/postgresql/*/bin (apt-get install postgresql)');
  const built = ['dist/libs/db/src/migrate/main.js', 'dist/apps/storage/src/objects/s3-object.client.js'];
  if (built.some((file) => !existsSync(join(ROOT, file)))) missing.push('the built code in dist/ (npm run build)');
  if (missing.length > 0) throw new Error(`the TLS tests need: ${missing.join('; ')}`);
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: '/', encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stdout}${result.stderr}`);
}

/** Postgres refuses to run as root: when we are root, its commands run as the `postgres` user. */
const isRoot = process.getuid?.() === 0;
function asPostgres(command: string, args: string[]): void {
  if (isRoot) run('runuser', ['-u', 'postgres', '--', command, ...args]);
  else run(command, args);
}

/** A port nothing listens on now (the kernel's pick). */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, CERTIFIED_HOST, () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

export interface ServerCertificate {
  cert: string;
  key: string;
}

/** A CA of the test's own (P-256, valid two days) and the server certificates it signs. */
export class TestCa {
  readonly certFile: string;
  private readonly keyFile: string;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.certFile = join(dir, 'ca.pem');
    this.keyFile = join(dir, 'ca.key');
    run('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2'],
      ...['-subj', '/CN=uhp-files TLS test CA', '-keyout', this.keyFile, '-out', this.certFile],
      ...['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    ]);
  }

  get pem(): string {
    return readFileSync(this.certFile, 'utf8');
  }

  /** A server certificate for `localhost` and CERTIFIED_HOST, as `<name>.pem` and `<name>.key` in `dir`. */
  issue(name: string, dir: string): ServerCertificate {
    mkdirSync(dir, { recursive: true });
    const [cert, key, csr, ext] = ['pem', 'key', 'csr', 'ext'].map((suffix) => join(dir, `${name}.${suffix}`));
    writeFileSync(
      ext,
      `subjectAltName = DNS:localhost, IP:${CERTIFIED_HOST}\nbasicConstraints = critical, CA:FALSE\n` +
        'keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n',
    );
    run('openssl', [
      ...['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'],
      ...['-subj', `/CN=${name}`, '-keyout', key!, '-out', csr!],
    ]);
    run('openssl', [
      ...['x509', '-req', '-in', csr!, '-CA', this.certFile, '-CAkey', this.keyFile, '-set_serial', `${Date.now()}`],
      ...['-days', '2', '-extfile', ext!, '-out', cert!],
    ]);
    return { cert: cert!, key: key! };
  }
}

/**
 * A PostgreSQL cluster of the test's own that takes TLS connections only (pg_hba: hostssl, no plain host line),
 * on CERTIFIED_HOST and OTHER_LOOPBACK.
 */
export class TlsPostgres {
  readonly port: number;
  private readonly dataDir: string;

  private constructor(
    private readonly dir: string,
    port: number,
  ) {
    this.port = port;
    this.dataDir = join(dir, 'data');
  }

  static async start(dir: string, ca: TestCa): Promise<TlsPostgres> {
    const server = new TlsPostgres(dir, await freePort());
    mkdirSync(dir, { recursive: true });
    const { cert, key } = ca.issue('postgres', dir);
    chmodSync(key, 0o600);
    if (isRoot) run('chown', ['-R', 'postgres:postgres', dir]);
    asPostgres(`${POSTGRES_BIN}/initdb`, ['-D', server.dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    writeFileSync(join(server.dataDir, 'pg_hba.conf'), 'local all all trust\nhostssl all all 127.0.0.0/8 trust\n');
    writeFileSync(
      join(server.dataDir, 'postgresql.auto.conf'),
      [
        `port = ${server.port}`,
        `listen_addresses = '${CERTIFIED_HOST},${OTHER_LOOPBACK}'`,
        `unix_socket_directories = '${dir}'`,
        'ssl = on',
        `ssl_cert_file = '${cert}'`,
        `ssl_key_file = '${key}'`,
        'fsync = off',
        'synchronous_commit = off',
        'full_page_writes = off',
        'max_connections = 20',
        'shared_buffers = 16MB',
      ].join('\n') + '\n',
    );
    if (isRoot) run('chown', ['-R', 'postgres:postgres', server.dataDir]);
    asPostgres(`${POSTGRES_BIN}/pg_ctl`, ['-D', server.dataDir, '-l', join(dir, 'log'), '-w', 'start']);
    return server;
  }

  /** `postgresql://…/<database>?sslmode=verify-full` on `host`. */
  url(database: string, host = CERTIFIED_HOST): string {
    return `postgresql://postgres@${host}:${this.port}/${database}?sslmode=verify-full`;
  }

  stop(): void {
    if (!existsSync(join(this.dataDir, 'postmaster.pid'))) return;
    asPostgres(`${POSTGRES_BIN}/pg_ctl`, ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
  }
}

/** A redis-server of the test's own with no plain port: TLS only (`--port 0 --tls-port`), no client certificates. */
export class TlsRedis {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
  ) {}

  static async start(dir: string, ca: TestCa): Promise<TlsRedis> {
    const port = await freePort();
    const { cert, key } = ca.issue('redis', dir);
    const child = spawn(
      'redis-server',
      [
        ...['--port', '0', '--tls-port', String(port), '--bind', CERTIFIED_HOST, OTHER_LOOPBACK],
        ...['--tls-cert-file', cert, '--tls-key-file', key, '--tls-ca-cert-file', ca.certFile],
        ...['--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no', '--dir', dir],
      ],
      { stdio: 'ignore' },
    );
    const server = new TlsRedis(port, child);
    const deadline = Date.now() + 10_000;
    while (!(await server.answers(ca.pem))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        server.stop();
        throw new Error(`redis-server with --tls-port ${port} did not start (exit code ${child.exitCode})`);
      }
      await sleep(50);
    }
    return server;
  }

  /** `rediss://<host>:<port>/0`. */
  url(host = CERTIFIED_HOST): string {
    return `rediss://${host}:${this.port}/0`;
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }

  private answers(ca: string): Promise<boolean> {
    return new Promise((done) => {
      const socket = tlsConnect({ host: CERTIFIED_HOST, port: this.port, ca }, () => socket.write('PING\r\n'));
      socket.setTimeout(1_000, () => socket.destroy());
      socket.once('data', (data) => {
        socket.destroy();
        done(data.toString().startsWith('+PONG'));
      });
      socket.once('error', () => done(false));
      socket.once('close', () => done(false));
    });
  }
}

/** The CA and both servers in one temporary directory; `stop` undoes all of it, whatever had started. */
export class TlsWorld {
  readonly dir = mkdtempSync(join(tmpdir(), 'uhp-tls-'));
  readonly ca: TestCa;
  postgres?: TlsPostgres;
  redis?: TlsRedis;

  constructor() {
    // The postgres user must reach its own folder inside this one.
    chmodSync(this.dir, 0o711);
    this.ca = new TestCa(join(this.dir, 'ca'));
  }

  async start(): Promise<void> {
    this.postgres = await TlsPostgres.start(join(this.dir, 'postgres'), this.ca);
    this.redis = await TlsRedis.start(join(this.dir, 'redis'), this.ca);
  }

  stop(): void {
    try {
      this.redis?.stop();
      this.postgres?.stop();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

export interface NodeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node <args>` in a fresh process whose only CA setting is `extraCaCerts` (NODE_EXTRA_CA_CERTS is read at
 * process start, and this machine's own value must not leak in): PATH, HOME and `env` besides.
 */
export function runNode(args: string[], env: Record<string, string>, extraCaCerts?: string): Promise<NodeRun> {
  const childEnv: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), ...env };
  if (extraCaCerts) childEnv.NODE_EXTRA_CA_CERTS = extraCaCerts;
  return new Promise((done) => {
    execFile(process.execPath, args, { cwd: ROOT, env: childEnv, timeout: 45_000 }, (error, stdout, stderr) =>
      done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}
