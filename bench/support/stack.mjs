/**
 * What every benchmark shares: the three built services started on their own ports, database, Redis db
 * and bucket (BENCH_PORT_BASE, BENCH_DATABASE_URL, BENCH_REDIS_URL, BENCH_BUCKET), extra service env
 * and node options (BENCH_SERVICE_ENV, BENCH_NODE_ARGS), the bench bucket and sizes like "100MiB". The
 * sections of docs/benchmarks.md are bench/support/benchmarks.mjs's.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

const require = createRequire(import.meta.url);

// The SDK's notice that later releases will need a newer Node says nothing about a measurement.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const LOG_DIR = join(ROOT, 'bench', 'results', 'logs');
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

export const PORT_BASE = Number(process.env.BENCH_PORT_BASE ?? 19080);
export const API_KEY = 'sk_bench_0123456789abcdef';
export const API_BASE = `http://127.0.0.1:${PORT_BASE}`;
export const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/uhp_bench';
export const S3 = {
  endpoint: process.env.S3_ENDPOINT ?? 'http://127.0.0.1:7480',
  region: process.env.S3_REGION ?? 'us-east-1',
  accessKeyId: process.env.S3_ACCESS_KEY_ID ?? 'uhp-dev-access',
  secretAccessKey: process.env.S3_SECRET_ACCESS_KEY ?? 'uhp-dev-secret-key-0123456789',
  bucket: process.env.BENCH_BUCKET ?? 'uhp-bench',
};

const SERVICES = ['storage', 'gateway', 'worker'];
const PORT_OF = { gateway: PORT_BASE, storage: PORT_BASE + 1, worker: PORT_BASE + 2 };

/**
 * The services' environment: the bench's ports, database, Redis db and bucket, then `extra`, then BENCH_SERVICE_ENV.
 */
export function serviceEnv(extra = {}) {
  return {
    HOST: '127.0.0.1',
    PORT: String(PORT_BASE),
    STORAGE_PORT: String(PORT_BASE + 1),
    WORKER_PORT: String(PORT_BASE + 2),
    STORAGE_URL: `http://127.0.0.1:${PORT_BASE + 1}`,
    STORAGE_TOKEN: 'bench-storage-token-0123456789abcdef',
    DATABASE_URL,
    REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/4',
    S3_ENDPOINT: S3.endpoint,
    S3_REGION: S3.region,
    S3_BUCKET: S3.bucket,
    S3_ACCESS_KEY_ID: S3.accessKeyId,
    S3_SECRET_ACCESS_KEY: S3.secretAccessKey,
    S3_FORCE_PATH_STYLE: 'true',
    UHP_API_KEYS: `bench=${API_KEY}`,
    UHP_PUBLIC_BASE_URL: API_BASE,
    LOG_LEVEL: 'warn',
    ...extra,
    ...Object.fromEntries(
      (process.env.BENCH_SERVICE_ENV ?? '')
        .split(',')
        .filter((kv) => kv.includes('='))
        .map((kv) => [kv.slice(0, kv.indexOf('=')).trim(), kv.slice(kv.indexOf('=') + 1).trim()]),
    ),
  };
}

/** The three services from dist/, started in order and each awaited at /readyz; killed if the bench dies. */
export class ServiceStack {
  #children = new Map();

  /** `logPrefix` names the logs in bench/results/logs (`<prefix><service>.log`). */
  constructor(env, logPrefix = '') {
    this.env = env;
    this.logPrefix = logPrefix;
    const killAll = () => {
      for (const child of this.#children.values()) if (child.exitCode === null) child.kill('SIGKILL');
    };
    process.once('exit', killAll);
    for (const signal of ['SIGINT', 'SIGTERM']) {
      process.once(signal, () => {
        killAll();
        process.exit(130);
      });
    }
  }

  pid(name) {
    return this.#children.get(name)?.pid;
  }

  async start() {
    mkdirSync(LOG_DIR, { recursive: true });
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
    for (const name of SERVICES) {
      const logFile = join(LOG_DIR, `${this.logPrefix}${name}.log`);
      const log = createWriteStream(logFile, { flags: 'w' });
      const child = spawn(process.execPath, [...nodeArgs, join(ROOT, 'dist/apps', name, 'src/main.js')], {
        cwd: ROOT,
        // As in the images (infra/docker/Dockerfile): glibc keeps up to 32 MiB of freed heap.
        env: {
          GLIBC_TUNABLES:
            'glibc.malloc.trim_threshold=33554432:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2',
          ...process.env,
          ...this.env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.pipe(log);
      child.stderr.pipe(log);
      this.#children.set(name, child);
      await this.#waitReady(name, child, logFile);
    }
  }

  async #waitReady(name, child, logFile) {
    const deadline = Date.now() + 90_000;
    let last = '';
    while (Date.now() < deadline) {
      if (child.exitCode !== null)
        throw new Error(`${name} exited with ${child.exitCode} during start; see ${logFile}`);
      try {
        const res = await fetch(`http://127.0.0.1:${PORT_OF[name]}/readyz`);
        if (res.ok) return;
        last = `${res.status} ${(await res.text()).slice(0, 300)}`;
      } catch (error) {
        last = String(error?.cause?.code ?? error);
      }
      await sleep(250);
    }
    throw new Error(`${name} not ready on port ${PORT_OF[name]} within 90 s (${last}); see ${logFile}`);
  }

  /** Throws unless every service is running and ready. */
  async checkReady() {
    for (const name of SERVICES) {
      if (this.#children.get(name)?.exitCode !== null) throw new Error(`${name} exited`);
      const res = await fetch(`http://127.0.0.1:${PORT_OF[name]}/readyz`);
      if (!res.ok) throw new Error(`${name} not ready`);
    }
  }

  async stop() {
    await Promise.all(
      [...this.#children.entries()].reverse().map(async ([name, child]) => {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((done) => child.once('exit', done));
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(timer);
        }
        this.#children.delete(name);
      }),
    );
  }
}

/** Clock ticks per second of /proc's CPU times. */
export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU (utime + stime, in ticks) and minor page faults of a process so far. */
export function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ticks: Number(fields[11]) + Number(fields[12]), minflt: Number(fields[7]) };
  } catch {
    return { ticks: NaN, minflt: NaN };
  }
}

/**
 * The part size, queue size and part-buffer budget the storage service runs with under `env` (the built
 * config schema's defaults and rules, so the bench's other sides copy the service and not a guess).
 */
export function storageUploadSettings(env) {
  const { fileLimitsOf, gatewayConfigSchema, storageConfigSchema } = require(
    join(ROOT, 'dist/libs/common/src/config/config.schema.js'),
  );
  const config = storageConfigSchema.parse({ ...process.env, ...env });
  // Same rules as ObjectsService.put and S3ObjectClient.upload for a POST /v1/files: the gateway caps the put
  // at its single-request limit, the storage service at the larger of its own two, and parts are big enough
  // for that cap to fit in 10,000 of them.
  const { maxSingleRequestFileBytes } = fileLimitsOf(gatewayConfigSchema.parse({ ...process.env, ...env }));
  const cap = Math.min(maxSingleRequestFileBytes, Math.max(config.UHP_MAX_FILE_BYTES, config.ARCHIVE_MAX_BYTES));
  const partSize = Math.max(config.S3_PART_SIZE_BYTES, Math.ceil(cap / 10_000));
  return { partSize, queueSize: config.S3_UPLOAD_QUEUE_SIZE, budgetBytes: config.STORAGE_MEMORY_BUDGET_BYTES };
}

/** An S3 client of the bench's server, with the storage service's checksum settings. */
export function benchS3Client(maxSockets = 16) {
  return new S3Client({
    endpoint: S3.endpoint,
    region: S3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: S3.accessKeyId, secretAccessKey: S3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets }) },
  });
}

export async function ensureBucket(s3) {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: S3.bucket }));
  } catch (error) {
    if (error?.name !== 'BucketAlreadyOwnedByYou' && error?.name !== 'BucketAlreadyExists') throw error;
  }
}

/** The bucket belongs to the benchmarks alone: whatever an earlier run left is removed. */
export async function deleteAllObjects(s3) {
  let token;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: S3.bucket, ContinuationToken: token }));
    const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key }));
    if (keys.length)
      await s3.send(new DeleteObjectsCommand({ Bucket: S3.bucket, Delete: { Objects: keys, Quiet: true } }));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

const LOCAL_S3_STATE = join(process.env.UHP_DATA_DIR ? resolve(process.env.UHP_DATA_DIR) : join(ROOT, '.data'), 'ceph');

/**
 * Makes sure the local S3 server (infra/local/s3.sh) can take `bytes` more before a step writes them:
 * radosgw frees deleted objects only a minute or so later, a run that writes and deletes many GiB fills its
 * OSD faster than that, and a full OSD blocks every write, so the run would hang instead of failing. Frees
 * what was deleted now, then fails with the figures when there is still no room. Does nothing for another
 * S3 server.
 */
export function makeRoomInLocalS3(bytes) {
  if (!existsSync(join(LOCAL_S3_STATE, 'initialised'))) return;
  const port = /^rgw frontends = beast endpoint=127\.0\.0\.1:(\d+)/m.exec(
    readFileSync(join(LOCAL_S3_STATE, 'ceph.conf'), 'utf8'),
  )?.[1];
  if (!port || !new RegExp(`^http://(127\\.0\\.0\\.1|localhost):${port}/?$`).test(S3.endpoint)) return;
  let answer;
  try {
    answer = execFileSync('bash', [join(ROOT, 'infra', 'local', 's3.sh'), 'reclaim'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    console.warn(`bench: could not reclaim the local S3 server's space: ${String(error?.stderr ?? error).trim()}`);
    return;
  }
  const [free, total] = answer.trim().split(/\s+/).map(Number);
  // The monitor stops writes at 95 % full; keep another 1 % and the bytes' rados overhead clear of it.
  const room = free - total * 0.06;
  if (room < bytes * 1.05)
    throw new Error(
      `the local S3 server has ${(free / GiB).toFixed(1)} GiB free of ${(total / GiB).toFixed(1)} GiB and writes stop at 95 %; ` +
        `this step writes ${(bytes / GiB).toFixed(1)} GiB. Delete what is left in bucket ${S3.bucket}, or start a bigger ` +
        `disk: bash infra/local/s3.sh stop; rm -rf ${LOCAL_S3_STATE}; S3_DISK_GB=40 bash infra/local/s3.sh start`,
    );
}

/** "100MiB" → { label, bytes }. */
export function parseSize(text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const units = { '': 1, b: 1, k: 1024, kib: 1024, kb: 1e3, m: MiB, mib: MiB, mb: 1e6, g: GiB, gib: GiB, gb: 1e9 };
  const unit = m ? units[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`bad size "${text}" (use e.g. 16MiB, 100MiB, 1GiB)`);
  return { label: text.trim(), bytes: Math.round(Number(m[1]) * unit) };
}
