/**
 * The fault tier: the real services as processes, one fault at a time, each judged by what a client sees
 * (a contract error, 503 with Retry-After where retrying helps, or a cut connection where the answer had
 * already begun — never a short body that looks whole), by the system recovering by itself with no restart
 * of any other piece, by the next request of the same kind succeeding, and by the doctor finding nothing.
 *
 * The dependencies that are stopped are the tier's own: a private PostgreSQL cluster (initdb/pg_ctl under
 * .data/, its own port, migrated with `prisma migrate deploy`) and a private redis-server (no persistence,
 * so a restart loses every queue, lock and scheduler). The shared servers on 5432/6379/7480 serve other
 * checkouts and CI and are never stopped. S3 is the shared radosgw behind a TCP-level proxy
 * (test/support/s3-fault-proxy.ts) whose `goAway` resets every connection and refuses new ones: to the
 * storage service that is exactly an S3 server going down. A second radosgw would also need a second
 * Ceph monitor and OSD (infra/local/s3.sh), heavy in memory and start time, for the same view from the client.
 *
 * Scenarios that leave an UPLOADING row (a gateway killed mid-upload, Postgres gone at commit) come
 * first: the worker reclaims such rows after STALE_UPLOAD_SECONDS (60 s, its minimum), and the last test
 * proves it did, by which time the other scenarios have used up most of that wait.
 */
import sharp from 'sharp';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../support/api';
import { KEYS } from '../support/env';
import { pollUntil } from '../support/poll';
import { docx, paragraph } from '../support/preview-fixtures';
import { slowUpload } from '../support/slow-upload';
import {
  answerOf,
  DEPENDENCY_BOUNDS_MS,
  expectRetryable,
  FaultsWorld,
  MiB,
  randomData,
  sha256,
  stalledGet,
} from './support/faults-world';

const world = new FaultsWorld();

beforeAll(() => world.start(), 240_000);
afterAll(() => world.stop(), 60_000);

/** What a client following Retry-After does: asks again while the answer is 503, for up to `timeoutMs`. */
async function untilServed(request: () => Promise<ApiResponse>, timeoutMs = 20_000): Promise<ApiResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await request().catch(
      (error: Error) => ({ status: -1, body: Buffer.from(error.message) }) as ApiResponse,
    );
    if ((res.status !== 503 && res.status !== -1) || Date.now() > deadline) return res;
    await sleep(250);
  }
}

async function uploadOk(name: string, bytes = 64 * 1024): Promise<string> {
  const data = randomData(bytes);
  const res = await untilServed(() => world.upload(name, data));
  expect(res.status, res.body.toString()).toBe(200);
  expect(res.json.sha256).toBe(sha256(data));
  return res.json.id;
}

async function downloadOk(path: string, expected: Buffer): Promise<void> {
  const res = await untilServed(() => world.call('GET', path));
  expect(res.status, res.body.toString().slice(0, 200)).toBe(200);
  expect(sha256(res.body)).toBe(sha256(expected));
}

/** A new session holding one PNG artifact: the paths of its PDF preview and of the session's archive. */
async function imageInSession(name: string, background: string): Promise<{ pdfPath: string; archivePath: string }> {
  const session = await world.session();
  const png = await sharp({ create: { width: 16, height: 16, channels: 3, background } })
    .png()
    .toBuffer();
  const image = await world.artifact(session.container_id, name, png, 'image/png');
  return {
    pdfPath: `/v1/containers/${session.container_id}/files/${image.id}/pdf`,
    archivePath: `/v1/sessions/${session.id}/files/archive`,
  };
}

/** The archive, asked for again while refused (503) or still building (202), as a client following Retry-After. */
function archiveServed(archivePath: string): Promise<ApiResponse> {
  return untilServed(async () => {
    const res = await world.call('GET', archivePath);
    return res.status === 202 ? { ...res, status: 503 } : res;
  }, 30_000);
}

/** A session holding `extra` more artifact rows than its one real file (all on that file's object, counted). */
async function bigSession(extra: number): Promise<{ id: string; files: number }> {
  const session = await world.session();
  const seed = await world.artifact(session.container_id, 'seed.txt', 'seed\n', 'text/plain');
  await world.sql.query(
    `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes,
                                  content_type, sha256, source)
     SELECT 'file_' || substr(md5(random()::text) || md5(random()::text), 1, 24), principal_id, session_id,
            container_id, object_id, 'f' || g || '.txt', bytes, content_type, sha256, source
       FROM container_files, generate_series(1, $2::int) g WHERE id = $1`,
    [seed.id, extra],
  );
  await world.sql.query(
    `UPDATE stored_objects SET ref_count = ref_count + $2 WHERE id = (SELECT object_id FROM container_files WHERE id = $1)`,
    [seed.id, extra],
  );
  return { id: session.id, files: extra + 1 };
}

/** A listing that began, stalled by its reader, then read to its end once `fault` has happened. */
async function listingThrough(sessionId: string, fault: () => Promise<void>) {
  const exchange = await stalledGet(world.port, `/v1/sessions/${sessionId}/files`);
  expect(await exchange.status(10_000)).toBe(200);
  await sleep(300); // the gateway is now held by back-pressure between two batches
  await fault();
  exchange.resumeReading();
  expect(await exchange.closedWithin(30_000).catch(() => false)).toBeDefined();
  return answerOf(exchange);
}

/** A listing is whole, or visibly cut: JSON that parses holds every file. */
function expectWholeOrCut(answer: { body: string }, files: number): 'whole' | 'cut' {
  let parsed: { files: unknown[] } | undefined;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return 'cut';
  }
  expect(parsed!.files).toHaveLength(files);
  return 'whole';
}

describe('the gateway SIGKILLed mid-upload', () => {
  it('the client loses its connection; the restarted gateway serves the next upload; nothing is left', async () => {
    const upload = await slowUpload({ port: world.port, key: KEYS.alice, bytes: 8 * MiB, seconds: 3 });
    await sleep(800);
    world.stack.kill('gateway');
    expect(await upload.done).toBeNull(); // no answer can come from a dead process: the socket closes
    await world.stack.start(['gateway']);
    await uploadOk('after-gateway-kill.bin');
    await world.expectDoctorClean();
  });
});

describe('Postgres connections killed and the server restarted', () => {
  it('connections killed mid-upload: the upload still completes, as does the next', async () => {
    const upload = await slowUpload({ port: world.port, key: KEYS.alice, bytes: 4 * MiB, seconds: 2 });
    await sleep(700);
    expect(await world.postgres.terminateBackends()).toBeGreaterThan(0);
    const status = await upload.done;
    if (status !== 200) expectRetryable(answerOf(upload.exchange));
    await uploadOk('after-terminate.bin');
    await world.expectDoctorClean();
  });

  it('connections killed mid-listing: the listing is whole or visibly cut, and the next one is whole', async () => {
    const session = await bigSession(30_000);
    const answer = await listingThrough(session.id, async () => {
      expect(await world.postgres.terminateBackends()).toBeGreaterThan(0);
    });
    expectWholeOrCut(answer, session.files);
    const again = await untilServed(() => world.call('GET', `/v1/sessions/${session.id}/files`));
    expect(again.status).toBe(200);
    expect(again.json.files).toHaveLength(session.files);
    await world.expectDoctorClean();
  });

  it('server restarted mid-upload: 503 with Retry-After while it is down, then uploads succeed again', async () => {
    const upload = await slowUpload({ port: world.port, key: KEYS.alice, bytes: 4 * MiB, seconds: 2 });
    await sleep(700);
    world.postgres.stop('fast');
    try {
      expectRetryable(await world.call('GET', '/v1/files'));
      const status = await upload.done;
      const answer = answerOf(upload.exchange);
      expect(status, answer.body).toBe(503);
      expectRetryable(answer);
    } finally {
      world.postgres.start();
    }
    await uploadOk('after-pg-restart.bin');
    await world.expectDoctorClean();
  });

  it('server restarted mid-listing: the listing is cut, never short; the next one is whole', async () => {
    const session = await bigSession(30_000);
    const answer = await listingThrough(session.id, async () => {
      world.postgres.stop('fast');
      await sleep(500);
    });
    world.postgres.start();
    expect(expectWholeOrCut(answer, session.files)).toBeDefined();
    const again = await untilServed(() => world.call('GET', `/v1/sessions/${session.id}/files`));
    expect(again.status).toBe(200);
    expect(again.json.files).toHaveLength(session.files);
    await world.expectDoctorClean();
  });
});

describe('Redis stopped and restarted', () => {
  it('during uploads: uploads and deletes go on; purges it lost are queued again once it is back', async () => {
    const doomed = await uploadOk('doomed.bin');
    const upload = await slowUpload({ port: world.port, key: KEYS.alice, bytes: 2 * MiB, seconds: 2 });
    await sleep(500);
    await world.redis.stop();
    try {
      const during = await world.upload('during-redis-outage.bin', randomData(4096));
      expect(during.status, during.body.toString()).toBe(200);
      const deleted = await world.call('DELETE', `/v1/files/${doomed}`);
      expect(deleted.status).toBe(200); // its purge cannot be queued now: the sweep queues it later
      expect(await upload.done).toBe(200);
    } finally {
      await world.redis.start();
    }
    await uploadOk('after-redis.bin');
    await world.expectDoctorClean(); // the PURGING object of the deleted file is purged: the sweep came back
  });

  it('during enqueues: previews and archives answer 503 with Retry-After, and succeed once it is back', async () => {
    const { pdfPath, archivePath } = await imageInSession('pic.png', '#3366aa');
    await world.redis.stop();
    try {
      expectRetryable(await world.call('GET', pdfPath));
      expectRetryable(await world.call('GET', archivePath));
    } finally {
      await world.redis.start();
    }
    const pdf = await untilServed(() => world.call('GET', pdfPath));
    expect(pdf.status, pdf.body.toString()).toBe(200);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    const zip = await archiveServed(archivePath);
    expect(zip.status, zip.body.toString()).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    await world.expectDoctorClean();
  });

  it('during a job: the conversion running when Redis goes away still lands; the next request is served', async () => {
    const session = await world.session();
    const doc = docx(Array.from({ length: 200 }, (_, i) => paragraph(`redis outage line ${i}`)).join(''));
    const file = await world.artifact(session.container_id, 'during-job.docx', doc);
    const pdfPath = `/v1/containers/${session.container_id}/files/${file.id}/pdf`;
    const pending = world.call('GET', pdfPath);
    await world.jobActive('preview');
    await world.redis.stop();
    await sleep(1000);
    await world.redis.start();
    const first = await pending;
    if (first.status !== 200) {
      expect(first.status, first.body.toString()).toBe(502);
      expect(first.json.error.code).toBe('preview_failed');
      expect(first.headers.get('x-should-retry')).not.toBe('false');
    }
    const again = await untilServed(() => world.call('GET', pdfPath));
    expect(again.status, again.body.toString()).toBe(200);
    await world.expectDoctorClean();
  });
});

describe('the S3 server going away', () => {
  it('mid-upload: 503 with Retry-After; once it is back uploads succeed and nothing is left', async () => {
    const partsBefore = world.s3.partsSeen;
    const upload = await slowUpload({ port: world.port, key: KEYS.alice, bytes: 16 * MiB, seconds: 3 });
    await pollUntil(async () => world.s3.partsSeen > partsBefore, 'a part on its way to S3', 20_000, 20);
    await world.s3.goAway();
    try {
      const status = await upload.done;
      const answer = answerOf(upload.exchange);
      expect(status, answer.body).toBe(503);
      expectRetryable(answer);
    } finally {
      await world.s3.comeBack();
    }
    await uploadOk('after-s3.bin', 6 * MiB);
    await world.expectDoctorClean();
  });

  it('mid-download: the transfer is cut short of its length; 503 while away; the next download is whole', async () => {
    const data = randomData(24 * MiB);
    const res = await world.upload('big-download.bin', data);
    expect(res.status).toBe(200);
    const path = `/v1/files/${res.json.id}/content`;
    const exchange = await stalledGet(world.port, path);
    expect(await exchange.status(10_000)).toBe(200);
    await world.s3.goAway();
    try {
      exchange.resumeReading();
      expect(await exchange.closedWithin(30_000)).toBe(true);
      expect(exchange.bytesReceived).toBeLessThan(data.length);
      expectRetryable(await world.call('GET', path));
    } finally {
      await world.s3.comeBack();
    }
    await downloadOk(path, data);
    await world.expectDoctorClean();
  });
});

describe('the storage service SIGKILLed mid-transfer', () => {
  it('mid-upload: 503 with Retry-After (or the cut connection); the restarted service takes the next', async () => {
    const partsBefore = world.s3.partsSeen;
    const upload = await slowUpload({ port: world.port, key: KEYS.alice, bytes: 16 * MiB, seconds: 3 });
    await pollUntil(async () => world.s3.partsSeen > partsBefore, 'a part on its way to S3', 20_000, 20);
    world.stack.kill('storage');
    const status = await upload.done;
    const answer = answerOf(upload.exchange);
    expect(status, answer.body).toBe(503);
    expectRetryable(answer);
    expectRetryable(await world.upload('while-storage-down.bin', randomData(1024)));
    await world.stack.start(['storage']);
    await uploadOk('after-storage-kill.bin', 6 * MiB);
    await world.expectDoctorClean();
  });

  it('mid-download: the transfer in flight ends whole (its bytes come straight from S3); 503 while away; the restarted service serves the next', async () => {
    const data = randomData(24 * MiB);
    const res = await world.upload('storage-download.bin', data);
    expect(res.status).toBe(200);
    const path = `/v1/files/${res.json.id}/content`;
    const exchange = await stalledGet(world.port, path);
    expect(await exchange.status(10_000)).toBe(200);
    world.stack.kill('storage');
    exchange.resumeReading();
    const head = exchange.text.indexOf('\r\n\r\n') + 4;
    await pollUntil(async () => exchange.bytesReceived - head >= data.length, 'the whole body', 30_000, 20);
    expect(sha256(Buffer.from(exchange.text.slice(head), 'latin1'))).toBe(sha256(data));
    exchange.destroy();
    expectRetryable(await world.call('GET', path));
    await world.stack.start(['storage']);
    await downloadOk(path, data);
    await world.expectDoctorClean();
  });
});

describe('the worker SIGKILLed mid-job', () => {
  it('mid-preview: the restarted worker takes the job over and the preview is served', async () => {
    const session = await world.session();
    const doc = docx(Array.from({ length: 300 }, (_, i) => paragraph(`worker kill line ${i}`)).join(''));
    const file = await world.artifact(session.container_id, 'worker-kill.docx', doc);
    const pdfPath = `/v1/containers/${session.container_id}/files/${file.id}/pdf`;
    const pending = world.call('GET', pdfPath);
    await world.jobActive('preview');
    world.stack.kill('worker');
    await world.stack.start(['worker']);
    const first = await pending;
    if (first.status !== 200) {
      expect(first.status, first.body.toString()).toBe(502);
      expect(first.json.error.code).toBe('preview_failed');
      expect(first.headers.get('x-should-retry')).not.toBe('false');
    }
    const again = await untilServed(() => world.call('GET', pdfPath), 30_000);
    expect(again.status, again.body.toString()).toBe(200);
    expect(again.body.subarray(0, 5).toString()).toBe('%PDF-');
    await world.expectDoctorClean();
  });

  it('mid-archive: 202 with Retry-After meanwhile; the restarted worker builds it and the zip is served', async () => {
    const session = await world.session();
    for (let i = 0; i < 4; i++) await world.artifact(session.container_id, `part-${i}.bin`, randomData(8 * MiB));
    const archivePath = `/v1/sessions/${session.id}/files/archive`;
    const pending = world.call('GET', archivePath);
    await world.jobActive('archive');
    world.stack.kill('worker');
    const first = await pending;
    if (first.status === 202) {
      expect(first.json).toMatchObject({ object: 'session.archive', status: 'in_progress' });
      expect(Number(first.headers.get('retry-after'))).toBeGreaterThan(0);
    } else expect(first.status, first.body.toString()).toBe(200);
    await world.stack.start(['worker']);
    const zip = await untilServed(async () => {
      const res = await world.call('GET', archivePath);
      return res.status === 202 ? { ...res, status: 503 } : res;
    }, 60_000);
    expect(zip.status, zip.body.toString()).toBe(200);
    expect(zip.body.length).toBeGreaterThan(32 * MiB);
    await world.expectDoctorClean();
  });
});

/** What a client measures: the answer, and how long it took to come. */
async function timed(request: () => Promise<ApiResponse>): Promise<{ res: ApiResponse; ms: number }> {
  const started = Date.now();
  const res = await request();
  return { res, ms: Date.now() - started };
}

/** Every service that is not itself stalled stays in rotation: /readyz 200. */
async function expectAllReady(except?: 'storage'): Promise<void> {
  for (const service of ['gateway', 'storage', 'worker'] as const) {
    if (service === except) continue;
    const ready = await world.probe(service, '/readyz');
    expect(ready.status, `${service} /readyz: ${ready.text}`).toBe(200);
  }
}

/** What a service's /healthz and its `uhp_dependency_up` gauge say of one dependency. */
async function dependencyState(service: 'gateway' | 'storage', dependency: string) {
  const health = JSON.parse((await world.probe(service, '/healthz')).text);
  const metrics = (await world.probe(service, '/metrics')).text;
  const gauge = new RegExp(`^uhp_dependency_up\\{[^}]*dependency="${dependency}"[^}]*\\} (\\d)`, 'm').exec(metrics);
  return { up: health.dependencies?.[dependency]?.up as boolean | undefined, gauge: gauge?.[1] };
}

/** Room above a bound for the work around it (a probe's own answer, the answer's way back), not a speed claim. */
const MARGIN_MS = 4_000;

describe('a dependency stalled (frozen with its connections open, as SIGSTOP does)', () => {
  it('S3 for 30 s: every /readyz stays 200; an upload and a download answer 503 within S3_REQUEST_TIMEOUT_MS, then at once; afterwards uploads succeed with no restart', async () => {
    const before = randomData(128 * 1024);
    const stored = await world.upload('before-s3-stall.bin', before);
    expect(stored.status).toBe(200);
    const stalledAt = Date.now();
    world.s3.stall();
    try {
      const upload = await timed(() => world.upload('during-s3-stall.bin', randomData(64 * 1024)));
      expectRetryable(upload.res);
      expect(upload.ms).toBeLessThan(DEPENDENCY_BOUNDS_MS.s3 + MARGIN_MS);
      const download = await timed(() => world.call('GET', `/v1/files/${stored.json.id}/content`));
      expectRetryable(download.res);
      expect(download.ms).toBeLessThan(DEPENDENCY_BOUNDS_MS.s3 + MARGIN_MS);
      // Known down now: the same requests are refused before anything is sent to S3.
      const again = await timed(() => world.upload('during-s3-stall-2.bin', randomData(64 * 1024)));
      expectRetryable(again.res);
      expect(again.ms).toBeLessThan(DEPENDENCY_BOUNDS_MS.s3);
      // As many at once as a principal may upload (8): each refused the same way, none waits out the bound,
      // nothing is kept (the doctor, below).
      const burst = await timed(async () => {
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) => world.upload(`burst-${i}.bin`, randomData(32 * 1024))),
        );
        for (const answer of answers) expectRetryable(answer);
        return answers[0];
      });
      expect(burst.ms).toBeLessThan(DEPENDENCY_BOUNDS_MS.s3);
      expect(await dependencyState('storage', 's3')).toEqual({ up: false, gauge: '0' });
      while (Date.now() - stalledAt < 30_000) {
        await expectAllReady();
        await sleep(2_000);
      }
    } finally {
      world.s3.unstall();
    }
    await uploadOk('after-s3-stall.bin');
    await downloadOk(`/v1/files/${stored.json.id}/content`, before);
    expect(await dependencyState('storage', 's3')).toEqual({ up: true, gauge: '1' });
    await world.expectDoctorClean();
  }, 90_000);

  it('the storage service: gateway and worker stay ready; an upload and a download answer 503 within the bound, then at once; afterwards both succeed', async () => {
    const before = randomData(128 * 1024);
    const stored = await world.upload('before-storage-stall.bin', before);
    expect(stored.status).toBe(200);
    world.stack.pause('storage');
    try {
      // Unanswered for STORAGE_REQUEST_TIMEOUT_MS, then a probe of /healthz unanswered for as long.
      const bound = 2 * DEPENDENCY_BOUNDS_MS.storage;
      const upload = await timed(() => world.upload('during-storage-stall.bin', randomData(64 * 1024)));
      expectRetryable(upload.res);
      expect(upload.ms).toBeLessThan(bound + MARGIN_MS);
      const download = await timed(() => world.call('GET', `/v1/files/${stored.json.id}/content`));
      expectRetryable(download.res);
      expect(download.ms).toBeLessThan(DEPENDENCY_BOUNDS_MS.storage);
      expect(await dependencyState('gateway', 'storage')).toEqual({ up: false, gauge: '0' });
      await expectAllReady('storage');
    } finally {
      world.stack.resume('storage');
    }
    await uploadOk('after-storage-stall.bin');
    await downloadOk(`/v1/files/${stored.json.id}/content`, before);
    await world.expectDoctorClean();
  }, 90_000);

  it('Redis: previews and archives answer 503 within REDIS_COMMAND_TIMEOUT_MS; uploads and downloads go on; afterwards previews are served', async () => {
    const { pdfPath, archivePath } = await imageInSession('stall.png', '#aa3366');
    world.redis.pause();
    try {
      const preview = await timed(() => world.call('GET', pdfPath));
      expectRetryable(preview.res);
      expect(preview.ms).toBeLessThan(DEPENDENCY_BOUNDS_MS.redis + MARGIN_MS);
      const archive = await timed(() => world.call('GET', archivePath));
      expectRetryable(archive.res);
      expect(archive.ms).toBeLessThan(DEPENDENCY_BOUNDS_MS.redis);
      const data = randomData(96 * 1024);
      const uploaded = await world.upload('during-redis-stall.bin', data);
      expect(uploaded.status, uploaded.body.toString()).toBe(200);
      await downloadOk(`/v1/files/${uploaded.json.id}/content`, data);
      expect(await dependencyState('gateway', 'redis')).toEqual({ up: false, gauge: '0' });
      await expectAllReady();
    } finally {
      world.redis.resume();
    }
    const pdf = await untilServed(() => world.call('GET', pdfPath), 30_000);
    expect(pdf.status, pdf.body.toString()).toBe(200);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    // The archive refused while Redis stalled is built once asked again, as Retry-After says.
    const zip = await archiveServed(archivePath);
    expect(zip.status, zip.body.toString()).toBe(200);
    await world.expectDoctorClean();
  }, 120_000);
});

describe('after every fault', () => {
  it('the sweep has reclaimed every upload a fault cut off, and the doctor finds nothing', async () => {
    const uploading = async () =>
      Number((await world.sql.query(`SELECT count(*) AS n FROM stored_objects WHERE status = 'UPLOADING'`)).rows[0].n);
    await pollUntil(async () => (await uploading()) === 0, 'no UPLOADING row left', 90_000, 1000);
    await world.expectDoctorClean();
  });
});
