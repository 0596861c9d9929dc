import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type pg from 'pg';
import { expect } from 'vitest';
import { QUEUE, type QueueName } from '@app/contracts';
import { runDoctor } from '../../apps/storage/src/cli/doctor';
import { describeFinding } from '../../apps/storage/src/doctor/consistency-checks';
import { api, fileForm, type ApiResponse } from './api';
import { doctorConfigFor } from './doctor';
import { pollUntil } from './poll';
import type { Stack } from './stack';
import { centralDirectory, extractWithUnzip } from './zip';

/**
 * What the Redis topology tests (test/e2e/redis-*.test.ts) drive through a stack of their own: uploads that
 * must all be kept, and previews and archives whose jobs must all run, with the checks that nothing was lost.
 */

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** The contract's answer to "Redis is away for now": 503 service_unavailable with a Retry-After. */
function expectRetryable(res: ApiResponse, what: string): void {
  expect(res.json?.error?.code, `${what}: ${res.body.toString().slice(0, 300)}`).toBe('service_unavailable');
  expect(Number(res.headers.get('retry-after')), `${what}: Retry-After`).toBeGreaterThan(0);
}

/** How long a client goes on retrying a 503: far longer than a failover takes. */
const RETRY_FOR_MS = 30_000;

/**
 * A client that honours Retry-After, waiting no more than half a second so a test stays short; it gives up, failing
 * the test, when the 503s last past RETRY_FOR_MS.
 */
async function retryPause(res: ApiResponse, what: string, since: number): Promise<void> {
  expectRetryable(res, what);
  if (Date.now() - since > RETRY_FOR_MS) expect.fail(`${what}: still 503 after ${RETRY_FOR_MS} ms`);
  await sleep(Math.min(500, Number(res.headers.get('retry-after') ?? 1) * 1000));
}

export interface StoredUpload {
  id: string;
  data: Buffer;
  /** Every answer it got, the last one the 200. */
  statuses: number[];
  startedAt: number;
  endedAt: number;
}

/** POST /v1/files until it is kept, retrying on 503 as the contract says. */
async function uploadUntilStored(base: string, filename: string, data: Buffer): Promise<StoredUpload> {
  const statuses: number[] = [];
  const startedAt = Date.now();
  for (;;) {
    const res = await api('POST', '/v1/files', { base, form: fileForm(filename, data) });
    statuses.push(res.status);
    if (res.status !== 503) {
      expect(res.status, `${filename}: ${res.body.toString().slice(0, 300)}`).toBe(200);
      return { id: res.json.id, data, statuses, startedAt, endedAt: Date.now() };
    }
    await retryPause(res, filename, startedAt);
  }
}

/** `lanes` clients uploading one small file after another until stopped: a steady flow, not a burst. */
export class UploadFlow {
  private isRunning = true;
  private readonly stored: StoredUpload[] = [];
  private readonly lanes: Promise<void>[];

  constructor(
    private readonly base: string,
    lanes: number,
    private readonly label: string,
  ) {
    this.lanes = Array.from({ length: lanes }, (_, lane) => this.run(lane));
    // Handled here, failed in stop(): a lane that failed early is no unhandled rejection meanwhile.
    for (const running of this.lanes) running.catch(() => undefined);
  }

  private async run(lane: number): Promise<void> {
    for (let i = 0; this.isRunning; i++) {
      const data = randomBytes(16_384 + Math.floor(Math.random() * 49_152));
      this.stored.push(await uploadUntilStored(this.base, `${this.label}-${lane}-${i}.bin`, data));
      await sleep(150);
    }
  }

  get count(): number {
    return this.stored.length;
  }

  /** Lets every upload in flight finish; fails with the first upload that was not kept. */
  async stop(): Promise<StoredUpload[]> {
    this.isRunning = false;
    await Promise.all(this.lanes);
    return this.stored;
  }

  /** Stops it after a test failed elsewhere: no upload outlives the test. */
  async abort(): Promise<void> {
    this.isRunning = false;
    await Promise.allSettled(this.lanes);
  }
}

/** Every upload downloads with the bytes it sent. */
export async function expectDownloadable(base: string, uploads: StoredUpload[]): Promise<void> {
  for (const upload of uploads) {
    const res = await api('GET', `/v1/files/${upload.id}/content`, { base });
    expect(res.status, `download of ${upload.id}`).toBe(200);
    expect(sha256(res.body), `bytes of ${upload.id}`).toBe(sha256(upload.data));
  }
}

/** A session with one text artifact of content of its own: it has a preview to convert and an archive to build. */
export interface Artifact {
  label: string;
  sessionId: string;
  containerId: string;
  fileId: string;
  filename: string;
  data: Buffer;
}

export async function newArtifact(base: string, label: string): Promise<Artifact> {
  const session = await api('POST', '/v1/sessions', { base, json: {} });
  expect(session.status, session.body.toString()).toBe(200);
  const filename = `${label}.txt`;
  const data = Buffer.from(`${label} ${randomBytes(8).toString('hex')}\n`);
  const file = await api('POST', `/v1/containers/${session.json.container_id}/files`, {
    base,
    form: fileForm(filename, data, 'text/plain'),
  });
  expect(file.status, file.body.toString()).toBe(200);
  return {
    label,
    sessionId: session.json.id,
    containerId: session.json.container_id,
    fileId: file.json.id,
    filename,
    data,
  };
}

const previewPath = (item: Artifact) => `/v1/containers/${item.containerId}/files/${item.fileId}/pdf`;
const archivePath = (item: Artifact) => `/v1/sessions/${item.sessionId}/files/archive`;

/**
 * Asks for the artifact's preview and its session's archive, each until the gateway has taken it: a 503 is
 * retried; a preview still converting (502 after PREVIEW_TIMEOUT_MS) or done (200), an archive building (202) or
 * done (200) is taken. Asked once taken, never again before the checks: a job lost in Redis would stay lost.
 */
export async function askPreviewAndArchive(
  base: string,
  item: Artifact,
): Promise<{ preview: number[]; archive: number[] }> {
  const askUntilTaken = async (path: string, taken: number[]) => {
    const statuses: number[] = [];
    const since = Date.now();
    for (;;) {
      const res = await api('GET', path, { base });
      statuses.push(res.status);
      if (res.status !== 503) {
        expect(taken, `${path}: ${res.status} ${res.body.toString().slice(0, 300)}`).toContain(res.status);
        return statuses;
      }
      await retryPause(res, path, since);
    }
  };
  const [preview, archive] = await Promise.all([
    askUntilTaken(previewPath(item), [200, 502]),
    askUntilTaken(archivePath(item), [200, 202]),
  ]);
  return { preview, archive };
}

interface JobRows {
  preview: { status: string } | undefined;
  archive: { status: string } | undefined;
}

async function rowsOf(sql: pg.Pool, item: Artifact): Promise<JobRows> {
  const preview = await sql.query(
    `SELECT p.status FROM previews p JOIN container_files c ON c.principal_id = p.principal_id
       AND p.sha256 IN (c.sha256, 'object-' || c.object_id) WHERE c.id = $1`,
    [item.fileId],
  );
  const archive = await sql.query('SELECT status FROM archives WHERE session_id = $1', [item.sessionId]);
  return { preview: preview.rows[0], archive: archive.rows[0] };
}

/**
 * Waits, without asking the gateway again, until every preview row is READY and every archive row ready: only the
 * jobs queued when they were asked can get them there.
 */
export async function expectJobsDone(sql: pg.Pool, items: Artifact[], timeoutMs = 45_000): Promise<void> {
  let rows: JobRows[] = [];
  const isDone = (row: JobRows) => row.preview?.status === 'READY' && row.archive?.status === 'ready';
  try {
    await pollUntil(
      async () => {
        rows = await Promise.all(items.map((item) => rowsOf(sql, item)));
        return rows.every(isDone);
      },
      'every preview READY and every archive ready',
      timeoutMs,
      500,
    );
  } catch {
    // Ids to find them in the services' logs (.data/test-logs).
    const stuck = items
      .map((item, i) => ({
        item: item.label,
        session: item.sessionId,
        file: item.fileId,
        preview: rows[i]?.preview?.status,
        archive: rows[i]?.archive?.status,
      }))
      .filter((_, i) => !isDone(rows[i]!));
    expect.fail(`jobs never done (lost?): ${JSON.stringify(stuck)}`);
  }
}

/** The preview is a PDF; the archive holds the artifact's bytes under its name. */
export async function expectServed(base: string, item: Artifact): Promise<void> {
  const pdf = await api('GET', previewPath(item), { base });
  expect(pdf.status, `${item.label} preview: ${pdf.body.toString().slice(0, 300)}`).toBe(200);
  expect(pdf.body.subarray(0, 5).toString()).toBe('%PDF-');
  const zip = await api('GET', archivePath(item), { base });
  expect(zip.status, `${item.label} archive: ${zip.body.toString().slice(0, 300)}`).toBe(200);
  expect(centralDirectory(zip.body).map((entry) => entry.name)).toEqual([item.filename]);
  expect(sha256(extractWithUnzip(zip.body).get(item.filename)!)).toBe(sha256(item.data));
}

/**
 * BullMQ's view of the stack's queues on one Redis node (the primary; in a cluster, the node owning the hash
 * tag's slot): nothing waiting, running, delayed or failed in the preview and archive queues, and no failed purge.
 * A job whose completion a failover lost shows as running until the worker's stalled check (every JOB_LOCK_MS)
 * runs it again: `withinMs` leaves room for that.
 */
export async function expectQueuesDrained(
  connection: { host: string; port: number; password: string },
  prefix: string,
  withinMs = 15_000,
): Promise<void> {
  const queues = new Map<QueueName, Queue>(
    [QUEUE.preview, QUEUE.archive, QUEUE.purge].map((name) => [
      name,
      new Queue(name, { prefix, connection: { ...connection, maxRetriesPerRequest: 1 } }),
    ]),
  );
  try {
    const counts = async (name: QueueName) =>
      queues.get(name)!.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed');
    const idle = { waiting: 0, prioritized: 0, active: 0, delayed: 0, failed: 0 };
    let last: unknown;
    await pollUntil(
      async () => {
        last = { preview: await counts(QUEUE.preview), archive: await counts(QUEUE.archive) };
        return JSON.stringify(last) === JSON.stringify({ preview: idle, archive: idle });
      },
      'preview and archive queues drained',
      withinMs,
    ).catch(() => expect(last).toEqual({ preview: idle, archive: idle }));
    expect((await counts(QUEUE.purge)).failed).toBe(0);
  } finally {
    await Promise.all([...queues.values()].map((queue) => queue.close()));
  }
}

/** The gateway's and the worker's /healthz say Redis answers (they mark it down when a call to it failed). */
export async function expectRedisUp(stack: Stack): Promise<void> {
  for (const service of ['gateway', 'worker'] as const) {
    let last: unknown;
    await pollUntil(
      async () => {
        const res = await fetch(`http://127.0.0.1:${stack.port(service)}/healthz`);
        const health = (await res.json()) as { dependencies?: Record<string, { up?: boolean }> };
        last = health.dependencies?.redis;
        return (last as { up?: boolean } | undefined)?.up === true;
      },
      `${service} /healthz reports redis up`,
      30_000,
    ).catch(() => expect(last, `${service} /healthz redis`).toMatchObject({ up: true }));
  }
}

/** What the doctor, with no grace, finds in the database and bucket: one line per finding. */
export async function doctorFindings(databaseUrl: string, bucket: string): Promise<string[]> {
  const report = await runDoctor(doctorConfigFor(databaseUrl, bucket), { repair: false, json: false });
  return report.findings.map(describeFinding);
}

/**
 * The doctor finds nothing beyond `known` (what an earlier test of the file left, which that test reports): every
 * object in the bucket has its row and every row its object, nothing half-done.
 */
export async function expectNothingLeftOver(databaseUrl: string, bucket: string, known: string[] = []): Promise<void> {
  let found: string[] = [];
  await pollUntil(
    async () => {
      found = (await doctorFindings(databaseUrl, bucket)).filter((finding) => !known.includes(finding));
      return found.length === 0;
    },
    'the doctor finds nothing',
    30_000,
    1_000,
  ).catch(() => expect.fail(`the doctor still finds:\n${found.join('\n')}`));
}
