import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3, TEST_BUCKET } from '../../support/env';
import { OTHER_LOOPBACK, requireTools, ROOT, runNode, TlsWorld, type NodeRun } from './support/tls-servers';

/**
 * Every outbound connection of the services trusts a private CA given by NODE_EXTRA_CA_CERTS (what the Helm chart
 * mounts), verifies the server's certificate and name in full, and is refused without it: PostgreSQL with
 * `sslmode=verify-full` through the migration runner and the Prisma client, Redis through `rediss://` and the
 * queue module's connection, S3 over https through the storage service's client, and undici through a presigned
 * read and a GET (HttpClient: the storage client, direct reads) and through Node's fetch (the gateway's agent
 * client). Each case is a fresh `node` running the built code (dist/, `npm run build`), since Node reads
 * NODE_EXTRA_CA_CERTS at start only. Postgres and Redis are private servers that take TLS only; S3 is the local
 * radosgw's https listener (infra/local/s3.sh, S3_TLS_PORT) with the CA s3.sh made.
 */

const PROBE = join(__dirname, 'support/tls-probe.cjs');
const MIGRATE = join(ROOT, 'dist/libs/db/src/migrate/main.js');
const DATA_DIR = process.env.UHP_DATA_DIR ?? join(ROOT, '.data');
/**
 * The CA of the radosgw that serves S3 here: ours (UHP_DATA_DIR), or, when s3.sh found another checkout's
 * server running and used it, that server's (beside the ceph.conf its process was started with).
 */
function s3TlsCa(): string {
  const own = join(DATA_DIR, 'ceph/tls/ca.pem');
  if (process.env.UHP_TEST_S3_TLS_CA) return process.env.UHP_TEST_S3_TLS_CA;
  if (existsSync(own)) return own;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    const conf = argv[0]?.endsWith('radosgw') ? argv[argv.indexOf('-c') + 1] : undefined;
    if (conf && existsSync(join(dirname(conf), 'tls/ca.pem'))) return join(dirname(conf), 'tls/ca.pem');
  }
  return own;
}
const S3_TLS_CA = s3TlsCa();
const S3_TLS_ENDPOINT = process.env.UHP_TEST_S3_TLS_ENDPOINT ?? `https://127.0.0.1:${process.env.S3_TLS_PORT ?? 7443}`;

/** What Node says when a chain does not end at a CA it trusts (the leaf alone is sent, or the CA with it). */
const UNTRUSTED = /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)$/;
const UNTRUSTED_TEXT = /unable to verify the first certificate|self-signed certificate|unable to get local issuer/;
const WRONG_NAME_TEXT = new RegExp(`Hostname/IP does not match certificate's altnames: IP: ${OTHER_LOOPBACK}`);

let world: TlsWorld | undefined;
/** A URL of the private Postgres for the test's own checks: it names the CA itself (a connection string's ssl wins). */
const trusting = (url: string) => `${url}&sslrootcert=${world!.ca.certFile}`;

beforeAll(async () => {
  requireTools();
  world = new TlsWorld();
  await world.start();
  const admin = new pg.Client({ connectionString: trusting(world.postgres!.url('postgres')) });
  await admin.connect();
  await admin.query('CREATE DATABASE uhp_tls');
  await admin.end();
}, 60_000);

afterAll(() => world?.stop());

const servers = () => {
  if (!world?.postgres || !world.redis) throw new Error('the TLS servers did not start (see beforeAll)');
  return { postgres: world.postgres, redis: world.redis, ca: world.ca.certFile };
};

/** The report a probe printed (its last line), with the process's output for a failure message. */
function reportOf(run: NodeRun): Record<string, { ok: boolean; [field: string]: unknown }> {
  const output = `exit ${run.code}\n${run.stdout}${run.stderr}`;
  expect(run.code, output).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!);
}

const migrate = (databaseUrl: string, ca?: string) => runNode([MIGRATE], { DATABASE_URL: databaseUrl }, ca);
const probe = (name: string, env: Record<string, string>, ca?: string) =>
  runNode([PROBE, name], env, ca).then(reportOf);

describe('PostgreSQL over TLS, sslmode=verify-full', () => {
  it('the migration runner (the migrate Job) migrates with the CA from NODE_EXTRA_CA_CERTS', async () => {
    const { postgres, ca } = servers();
    const run = await migrate(postgres.url('uhp_tls'), ca);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/migrate: [1-9]\d* migration\(s\) applied/);
    // No sslmode alias warning either: verify-full is what pg does today and will do in pg 9.
    expect(run.stderr).not.toMatch(/SECURITY WARNING/);
    const check = new pg.Client({ connectionString: trusting(postgres.url('uhp_tls')) });
    await check.connect();
    const { rows } = await check.query(
      'SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL',
    );
    await check.end();
    expect(rows[0].n).toBeGreaterThan(0);
  });

  it('the migration runner is refused without the CA, and with it on a name the certificate does not carry', async () => {
    const { postgres, ca } = servers();
    const untrusted = await migrate(postgres.url('uhp_tls'));
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(UNTRUSTED_TEXT);
    const wrongName = await migrate(postgres.url('uhp_tls', OTHER_LOOPBACK), ca);
    expect(wrongName.code).toBe(1);
    expect(wrongName.stderr).toMatch(WRONG_NAME_TEXT);
  });

  it('the Prisma client of the services connects with the CA, over TLS', async () => {
    const { postgres, ca } = servers();
    const report = await probe('prisma', { DATABASE_URL: postgres.url('uhp_tls') }, ca);
    expect(report.query).toMatchObject({ ok: true, ssl: true, version: expect.stringMatching(/^TLSv1\.[23]$/) });
  });

  it('the Prisma client is refused without the CA, and with it on a name the certificate does not carry', async () => {
    const { postgres, ca } = servers();
    const untrusted = await probe('prisma', { DATABASE_URL: postgres.url('uhp_tls') });
    expect(untrusted.query!.ok).toBe(false);
    expect(untrusted.query!.message).toMatch(UNTRUSTED_TEXT);
    const wrongName = await probe('prisma', { DATABASE_URL: postgres.url('uhp_tls', OTHER_LOOPBACK) }, ca);
    expect(wrongName.query!.ok).toBe(false);
    expect(wrongName.query!.message).toMatch(WRONG_NAME_TEXT);
  });
});

describe('Redis over TLS, rediss://', () => {
  it("the queue module's connection queues a job with the CA from NODE_EXTRA_CA_CERTS, verified", async () => {
    const { redis, ca } = servers();
    const report = await probe('redis', { REDIS_URL: redis.url() }, ca);
    expect(report.queue).toMatchObject({ ok: true, waiting: 1, encrypted: true, authorized: true });
  });

  it('is refused without the CA, and with it on a name the certificate does not carry', async () => {
    const { redis, ca } = servers();
    const untrusted = await probe('redis', { REDIS_URL: redis.url() });
    expect(untrusted.queue).toMatchObject({ ok: false, code: expect.stringMatching(UNTRUSTED) });
    const wrongName = await probe('redis', { REDIS_URL: redis.url(OTHER_LOOPBACK) }, ca);
    expect(wrongName.queue).toMatchObject({ ok: false, code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  });
});

describe('S3 over https (the local radosgw), and fetch (undici)', () => {
  const s3Env = () => {
    if (!existsSync(S3_TLS_CA))
      throw new Error(`no ${S3_TLS_CA}: start the local S3 with its https listener (infra/local/s3.sh start)`);
    return {
      S3_ENDPOINT: S3_TLS_ENDPOINT,
      S3_REGION: S3.region,
      S3_BUCKET: TEST_BUCKET,
      S3_ACCESS_KEY_ID: S3.accessKeyId,
      S3_SECRET_ACCESS_KEY: S3.secretAccessKey,
    };
  };

  it('the storage S3 client, a presigned read, HttpClient and fetch reach it with the CA from NODE_EXTRA_CA_CERTS', async () => {
    const report = await probe('s3', s3Env(), S3_TLS_CA);
    expect(report.sdk).toMatchObject({ ok: true, size: expect.any(Number) });
    expect(report.presignedRead).toMatchObject({ ok: true, status: 200, text: expect.stringMatching(/^tls probe /) });
    expect(report.httpGet).toMatchObject({ ok: true, status: 200 });
    expect(report.fetchGet).toMatchObject({ ok: true, status: 200 });
  });

  it('all four are refused without the CA', async () => {
    const report = await probe('s3', s3Env());
    for (const step of ['sdk', 'presignedRead', 'httpGet', 'fetchGet'])
      expect(report[step], step).toMatchObject({ ok: false, code: expect.stringMatching(UNTRUSTED) });
  });
});
