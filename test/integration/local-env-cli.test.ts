import { DeleteBucketCommand } from '@aws-sdk/client-s3';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDatabase } from '../support/db';
import { S3, TEST_BUCKET } from '../support/env';
import { emptyBucket, ensureBucket, s3 } from '../support/s3';

// `npm run doctor` and `npm run keys` right after `npm start`: the built CLIs, with no settings in their
// environment, reach the database and bucket named in `$UHP_DATA_DIR/local.env` (what infra/local/start.sh
// writes). A database and a bucket of their own, so the doctor's report is about this test alone.
const ROOT = join(__dirname, '../..');
const DOCTOR = join(ROOT, 'dist/apps/storage/src/cli/doctor.js');
const KEYS = join(ROOT, 'dist/apps/gateway/src/cli/keys.js');
const BUCKET = `${TEST_BUCKET}-local-env`;
/** What the CLIs read, which must come from the file here, not from the test runner's environment. */
const SETTINGS = /^(DATABASE_|REDIS_|S3_|STORAGE_|AWS_|UHP_DATA_DIR$|PORT$)/;
let database: { url: string; drop(): Promise<void> };
let dataDir: string;

/** The runner's environment without any setting the CLIs read, and no other place the AWS SDK finds keys. */
function bareEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !SETTINGS.test(key)));
  return {
    ...env,
    AWS_SHARED_CREDENTIALS_FILE: join(dataDir, 'no-credentials'),
    AWS_CONFIG_FILE: join(dataDir, 'no-config'),
    AWS_EC2_METADATA_DISABLED: 'true',
    ...extra,
  };
}

const run = (script: string, args: string[], env: NodeJS.ProcessEnv) =>
  spawnSync(process.execPath, [script, ...args], { env, cwd: dataDir, encoding: 'utf8', timeout: 60_000 });

beforeAll(async () => {
  database = await scratchDatabase('local_env');
  await ensureBucket(BUCKET);
  await emptyBucket(BUCKET);
  dataDir = mkdtempSync(join(tmpdir(), 'uhp-local-env-'));
  writeFileSync(
    join(dataDir, 'local.env'),
    [
      '# as infra/local/start.sh writes it',
      `DATABASE_URL=${database.url}`,
      `S3_ENDPOINT=${S3.endpoint}`,
      `S3_REGION=${S3.region}`,
      'S3_FORCE_PATH_STYLE=true',
      `S3_BUCKET=${BUCKET}`,
      `S3_ACCESS_KEY_ID=${S3.accessKeyId}`,
      `S3_SECRET_ACCESS_KEY=${S3.secretAccessKey}`,
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await database?.drop();
  await s3.send(new DeleteBucketCommand({ Bucket: BUCKET })).catch(() => undefined);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('the operator CLIs on the local stack', () => {
  it('doctor checks the database and bucket of local.env, with its S3 keys', () => {
    const checked = run(DOCTOR, ['--json', '--grace-seconds', '0'], bareEnv({ UHP_DATA_DIR: dataDir }));
    expect(checked.stderr).toContain('S3_ACCESS_KEY_ID');
    expect(checked.status).toBe(0);
    expect(JSON.parse(checked.stdout)).toMatchObject({ findings: [], remaining: 0 });
  });

  it('doctor without the file has no S3 keys, as before local.env existed', () => {
    const empty = mkdtempSync(join(tmpdir(), 'uhp-no-local-env-'));
    try {
      const checked = run(DOCTOR, ['--json'], bareEnv({ UHP_DATA_DIR: empty, DATABASE_URL: database.url }));
      expect(checked.status).toBe(3);
      expect(checked.stderr).toMatch(/credentials/i);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('keys finds .data/local.env under its working directory, as `npm run` starts it in the checkout', async () => {
    const checkout = mkdtempSync(join(tmpdir(), 'uhp-checkout-'));
    try {
      const dotData = join(checkout, '.data');
      mkdirSync(dotData);
      writeFileSync(join(dotData, 'local.env'), `DATABASE_URL=${database.url}\n`);
      const name = `local-${randomUUID().slice(0, 8)}`;
      const created = spawnSync(process.execPath, [KEYS, 'create', name], {
        env: bareEnv(),
        cwd: checkout,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(created.status).toBe(0);
      expect(created.stdout.trim()).toMatch(/^sk_uhp_/);
      const sql = new pg.Client({ connectionString: database.url });
      await sql.connect();
      try {
        const { rows } = await sql.query('SELECT count(*)::int AS n FROM principals WHERE name = $1', [name]);
        expect(rows[0].n).toBe(1);
      } finally {
        await sql.end();
      }
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });

  it("keys takes the environment's DATABASE_URL over the file's", () => {
    const wrong = join(dataDir, 'wrong');
    mkdirSync(wrong);
    writeFileSync(join(wrong, 'local.env'), 'DATABASE_URL=postgresql://postgres@127.0.0.1:5432/no_such_database\n');
    const listed = run(KEYS, ['list'], bareEnv({ UHP_DATA_DIR: wrong, DATABASE_URL: database.url }));
    expect(listed.status).toBe(0);
    expect(listed.stdout.split('\n')[0]).toBe('id\tprincipal\tprefix\tlabel\tcreated\trevoked');
    expect(listed.stderr).not.toContain('DATABASE_URL');
  });
});
