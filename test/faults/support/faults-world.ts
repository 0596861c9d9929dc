import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import pg from 'pg';
import { expect } from 'vitest';
import { doctorConfigSchema, loadConfig } from '@app/common';
import type { QueueName } from '@app/contracts';
import { runDoctor } from '../../../apps/storage/src/cli/doctor';
import { describeFinding, type Finding } from '../../../apps/storage/src/doctor/consistency-checks';
import { api, fileForm, type ApiResponse } from '../../support/api';
import { KEYS, S3, TEST_BUCKET, testPort } from '../../support/env';
import { RawExchange } from '../../support/raw-http';
import { emptyBucket, ensureBucket } from '../../support/s3';
import { S3FaultProxy } from '../../support/s3-fault-proxy';
import { Stack } from '../../support/stack';
import { PrivatePostgres } from './private-postgres';
import { PrivateRedis } from './private-redis';

const MiB = 1024 * 1024;
export const FAULTS_BUCKET = `${TEST_BUCKET}-faults`;
const KEY_PREFIX = 'faults';
/** The worker reclaims UPLOADING rows this old; the doctor judges them by the same horizon. */
export const STALE_UPLOAD_SECONDS = 60;
/** The stack's S3_REQUEST_TIMEOUT_MS, STORAGE_REQUEST_TIMEOUT_MS and REDIS_COMMAND_TIMEOUT_MS. */
export const DEPENDENCY_BOUNDS_MS = { s3: 3_000, storage: 3_000, redis: 2_000 } as const;
const ABANDONED_UPLOAD_SECONDS = 5;

/**
 * Everything one fault scenario needs: a private Postgres and Redis it may stop, S3 behind a proxy it may
 * take away, the three services as processes, and the doctor to say whether anything was left behind.
 */
export class FaultsWorld {
  readonly postgres = new PrivatePostgres(testPort(15432));
  readonly redis = new PrivateRedis(testPort(16379));
  readonly s3 = new S3FaultProxy();
  stack!: Stack;
  sql!: pg.Pool;
  private readonly queues = new Map<QueueName, Queue>();

  async start(): Promise<void> {
    await ensureBucket(FAULTS_BUCKET);
    await emptyBucket(FAULTS_BUCKET); // the last run's objects would be orphans to the fresh database
    await this.redis.start();
    await this.postgres.create(); // blocks while it runs (spawnSync): after Redis, whose start polls
    const endpoint = await this.s3.start();
    this.sql = new pg.Pool({ connectionString: this.postgres.url, max: 2 });
    this.sql.on('error', () => undefined); // its idle clients die with the server in the Postgres scenarios
    this.stack = new Stack(testPort(18780), {
      DATABASE_URL: this.postgres.url,
      DATABASE_POOL_SIZE: '5',
      REDIS_URL: this.redis.url,
      REDIS_KEY_PREFIX: KEY_PREFIX,
      S3_ENDPOINT: endpoint,
      S3_BUCKET: FAULTS_BUCKET,
      UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(64 * MiB),
      S3_PART_SIZE_BYTES: String(5 * MiB),
      SWEEP_INTERVAL_MS: '1000',
      STALE_UPLOAD_SECONDS: String(STALE_UPLOAD_SECONDS),
      LOST_PURGE_SECONDS: '2',
      JOB_LOCK_MS: '3000',
      STORAGE_ABANDONED_UPLOAD_SECONDS: String(ABANDONED_UPLOAD_SECONDS),
      STORAGE_SWEEP_INTERVAL_MS: '1000',
      PREVIEW_TIMEOUT_MS: '20000',
      PREVIEW_OFFICE_POOL_SIZE: '1',
      ARCHIVE_WAIT_MS: '2000',
      UHP_DRAIN_TIMEOUT_MS: '2000',
      // Short bounds, so the stall scenarios wait seconds rather than the defaults' half-minutes.
      S3_REQUEST_TIMEOUT_MS: String(DEPENDENCY_BOUNDS_MS.s3),
      STORAGE_REQUEST_TIMEOUT_MS: String(DEPENDENCY_BOUNDS_MS.storage),
      REDIS_COMMAND_TIMEOUT_MS: String(DEPENDENCY_BOUNDS_MS.redis),
    });
    await this.stack.start();
  }

  async stop(): Promise<void> {
    for (const queue of this.queues.values()) await queue.close().catch(() => undefined);
    await this.stack?.stop();
    await this.sql?.end().catch(() => undefined);
    await this.s3.stop().catch(() => undefined);
    await this.redis.destroy();
    this.postgres.destroy();
  }

  get base(): string {
    return this.stack.baseUrl;
  }

  get port(): number {
    return this.stack.port('gateway');
  }

  /** GET on one service's own port (a probe, /metrics): status and body. */
  async probe(service: 'gateway' | 'storage' | 'worker', path: string): Promise<{ status: number; text: string }> {
    const res = await fetch(`http://127.0.0.1:${this.stack.port(service)}${path}`, {
      signal: AbortSignal.timeout(5_000),
    });
    return { status: res.status, text: await res.text() };
  }

  call(method: string, path: string, opts: Parameters<typeof api>[2] = {}): Promise<ApiResponse> {
    return api(method, path, { ...opts, base: this.base });
  }

  async upload(name: string, data: Buffer | string, type = 'application/octet-stream'): Promise<ApiResponse> {
    return this.call('POST', '/v1/files', { form: fileForm(name, data, type) });
  }

  async session(): Promise<{ id: string; container_id: string }> {
    const res = await this.call('POST', '/v1/sessions', { json: {} });
    expect(res.status).toBe(200);
    return res.json;
  }

  async artifact(containerId: string, name: string, data: Buffer | string, type?: string): Promise<{ id: string }> {
    const res = await this.call('POST', `/v1/containers/${containerId}/files`, { form: fileForm(name, data, type) });
    expect(res.status, res.body.toString()).toBe(200);
    return res.json;
  }

  /** A BullMQ view of one of the stack's queues (its own prefix, in the private Redis). */
  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { prefix: KEY_PREFIX, connection: { url: this.redis.url, maxRetriesPerRequest: 1 } });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Resolves once a job of the queue is being worked on. */
  async jobActive(name: QueueName, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (
        (await this.queue(name)
          .getActiveCount()
          .catch(() => 0)) > 0
      )
        return;
      await sleep(20);
    }
    throw new Error(`no ${name} job became active within ${timeoutMs} ms`);
  }

  /**
   * The doctor, with the services' own horizons and no grace: polls until it finds nothing (the sweeps
   * settle what a fault left), or fails with what it still finds.
   */
  async expectDoctorClean(timeoutMs = 30_000): Promise<void> {
    const config = loadConfig(doctorConfigSchema, {
      DATABASE_URL: this.postgres.url,
      S3_ENDPOINT: S3.endpoint,
      S3_REGION: S3.region,
      S3_BUCKET: FAULTS_BUCKET,
      S3_ACCESS_KEY_ID: S3.accessKeyId,
      S3_SECRET_ACCESS_KEY: S3.secretAccessKey,
      STORAGE_ABANDONED_UPLOAD_SECONDS: String(ABANDONED_UPLOAD_SECONDS),
      STALE_UPLOAD_SECONDS: String(STALE_UPLOAD_SECONDS),
      DOCTOR_GRACE_SECONDS: '0',
    });
    const deadline = Date.now() + timeoutMs;
    let findings: Finding[] = [];
    while (Date.now() < deadline) {
      findings = (await runDoctor(config, { repair: false, json: false })).findings;
      if (findings.length === 0) return;
      await sleep(500);
    }
    throw new Error(`the doctor still finds, after ${timeoutMs} ms:\n${findings.map(describeFinding).join('\n')}`);
  }
}

/** A 503 that says retrying helps: the contract's body and a Retry-After. */
export function expectRetryable(res: {
  status: number | null;
  headers: Headers | Record<string, unknown>;
  json?: any;
  body?: unknown;
}) {
  expect(res.status, String(res.body)).toBe(503);
  const retryAfter = res.headers instanceof Headers ? res.headers.get('retry-after') : res.headers['retry-after'];
  expect(Number(retryAfter)).toBeGreaterThan(0);
  const json = res.json ?? JSON.parse(String(res.body));
  expect(json.error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });
}

/** What a raw exchange got: its status and parsed body, or that the connection was cut before an answer. */
export function answerOf(exchange: RawExchange): {
  status: number | null;
  headers: Record<string, string>;
  body: string;
} {
  const text = exchange.text;
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return { status: null, headers: {}, body: '' };
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  let body = text.slice(split + 4);
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body };
}

function dechunk(raw: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol < 0) return out;
    const size = parseInt(raw.slice(at, eol), 16);
    if (!size) return out;
    out += raw.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

/** A GET on a raw socket whose reader stalls once the head has arrived, to cut things mid-transfer. */
export function stalledGet(port: number, path: string): Promise<RawExchange> {
  return RawExchange.open(port, RawExchange.head('GET', path, { authorization: `Bearer ${KEYS.alice}` }), {
    stallAfterHead: true,
  });
}

export const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
export const randomData = (bytes: number) => randomBytes(bytes);
export { MiB };
