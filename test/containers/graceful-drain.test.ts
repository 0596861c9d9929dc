import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../support/poll';
import { slowUpload } from '../support/slow-upload';
import {
  exec,
  logs,
  objectKeys,
  recreate,
  scale,
  signal,
  sql,
  stackEnv,
  start,
  waitExit,
  type Service,
  type StackEnv,
} from './support/stack';

/**
 * SIGTERM to the containers of the compose stack, as `docker compose stop` and Kubernetes send it:
 * an upload in flight through a stopping gateway or storage completes; an archive build and a
 * conversion in flight on a stopping worker are handed back to the queue and finished by another
 * worker, with no orphan object in the bucket and no row left pending.
 */
const MiB = 1024 * 1024;
let env: StackEnv;

beforeAll(async () => {
  env = await stackEnv();
});

async function api(method: string, path: string, body?: FormData | object): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${env.keyA}` };
  let payload: FormData | string | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  return fetch(`${env.baseUrl}${path}`, { method, headers, body: payload });
}

/** SIGTERM, then the exit: by itself (0, or 143 for a process ended by the signal it handled), never SIGKILL. */
async function stopBySigterm(service: Service, index = 1): Promise<number> {
  await signal(service, 'TERM', index);
  const code = await waitExit(service, index, 90);
  expect([0, 143], `${service} #${index} exit status after SIGTERM`).toContain(code);
  return code;
}

/**
 * Every key in the bucket belongs to a live object row, and every object row that is not being written
 * is referenced by something: nothing orphaned on either side once the purge queue has caught up.
 */
async function expectNoOrphans(): Promise<void> {
  await pollUntil(
    async () => {
      const live = new Set(
        (await sql(`SELECT storage_key FROM stored_objects WHERE status IN ('UPLOADING', 'READY')`)).map(([k]) => k),
      );
      const stray = (await objectKeys()).filter((key) => !live.has(key));
      const unreferenced = await sql(
        `SELECT o.id FROM stored_objects o WHERE o.status = 'READY'
           AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
           AND NOT EXISTS (SELECT 1 FROM container_files c WHERE c.object_id = o.id)
           AND NOT EXISTS (SELECT 1 FROM previews p WHERE p.object_id = o.id)
           AND NOT EXISTS (SELECT 1 FROM archives a WHERE a.object_id = o.id)`,
      );
      return stray.length === 0 && unreferenced.length === 0;
    },
    'no object in the bucket without a live row, no row without a referrer',
    60_000,
  );
}

describe.each(['gateway', 'storage'] as const)('SIGTERM to %s during an upload', (service) => {
  it('the upload in flight completes within the grace period, the container exits by itself', async () => {
    const port = Number(new URL(env.baseUrl).port);
    const upload = await slowUpload({ port, key: env.keyA, bytes: 8 * MiB - 4096, seconds: 4, filename: 'drain.bin' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await signal(service, 'TERM');
    if (service === 'gateway') {
      // Draining: not ready and no new requests, while the upload goes on. (Through Docker's port proxy a
      // refused connection to the container shows as one that never answers, hence the timeout.)
      await new Promise((resolve) => setTimeout(resolve, 300));
      const probe = await fetch(`${env.baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
        (res) => res.status,
        () => 'no answer',
      );
      expect(probe).not.toBe(200);
    }
    expect(await upload.done, upload.exchange.text.slice(0, 400)).toBe(200);
    const body = JSON.parse(upload.exchange.text.slice(upload.exchange.text.indexOf('\r\n\r\n') + 4)) as {
      id: string;
      bytes: number;
    };
    expect(body.bytes).toBe(8 * MiB - 4096);
    const code = await waitExit(service, 1, 60);
    expect([0, 143], `${service} exit status after SIGTERM`).toContain(code);
    await start(service);
    await pollUntil(async () => (await fetch(`${env.baseUrl}/readyz`)).status === 200, 'gateway ready again', 60_000);
    const stored = await sql(
      `SELECT o.status FROM files f JOIN stored_objects o ON o.id = f.object_id WHERE f.id = '${body.id}'`,
    );
    expect(stored).toEqual([['READY']]);
  });
});

describe('SIGTERM to a worker during its job', () => {
  // The worker under test gets a short grace, so its job is still running when the grace ends; a second
  // worker of the same service (default grace) waits stopped, and starts once the first has handed back.
  const shortGrace = { WORKER_SHUTDOWN_GRACE_MS: '500' };
  afterAll(async () => {
    await recreate('worker-archive');
    await recreate('worker-preview');
  });

  async function firstWorkerAndAStoppedSecond(service: 'worker-archive' | 'worker-preview'): Promise<void> {
    await recreate(service, shortGrace);
    await scale(service, 2);
    await stopBySigterm(service, 2);
  }

  async function handBackToTheSecond(service: 'worker-archive' | 'worker-preview'): Promise<void> {
    await stopBySigterm(service, 1);
    expect(await logs(service, 1)).toContain('grace period over: handing the jobs in flight back to the queue');
    await start(service, 2);
  }

  it('an archive build is handed back and the other worker builds it: one archive, no orphan, no stuck row', async () => {
    await firstWorkerAndAStoppedSecond('worker-archive');
    const session = (await (await api('POST', '/v1/sessions', {})).json()) as { id: string; container_id: string };
    // Text deflates (binary is stored), so the build takes seconds: long enough to stop it midway.
    for (let i = 0; i < 16; i++) {
      const form = new FormData();
      form.append('file', new Blob([randomBytes(4 * MiB - 1024).toString('hex')]), `part-${i}.txt`);
      const res = await api('POST', `/v1/containers/${session.container_id}/files`, form);
      expect(res.status, await res.clone().text()).toBe(200);
    }
    // The gateway holds this request while the build runs (ARCHIVE_WAIT_MS); it only starts the build here.
    const first = api('GET', `/v1/sessions/${session.id}/files/archive`).catch(() => undefined);
    const [archiveId] = (await pollUntil(
      async () => (await sql(`SELECT id FROM archives WHERE session_id = '${session.id}' AND status = 'building'`))[0],
      'build under way',
      60_000,
    ))!;

    await handBackToTheSecond('worker-archive');
    await pollUntil(
      async () => (await api('GET', `/v1/sessions/${session.id}/files/archive`)).status === 200,
      'archive built by the other worker',
      120_000,
    );
    await first;
    expect(await logs('worker-archive', 2)).toMatch(new RegExp(`"archiveId":"${archiveId}"[^\\n]*archive built`));
    expect(await logs('worker-archive', 1)).not.toContain('archive built');
    expect(await sql(`SELECT status FROM archives WHERE session_id = '${session.id}'`)).toEqual([['ready']]);
    await expectNoOrphans();
  });

  it('a conversion is handed back and the other worker converts it: no preview left pending, no orphan', async () => {
    await firstWorkerAndAStoppedSecond('worker-preview');
    const session = (await (await api('POST', '/v1/sessions', {})).json()) as { id: string; container_id: string };
    const lines = Array.from({ length: 60_000 }, (_, i) => `line ${i} ${randomBytes(24).toString('hex')}`).join('\n');
    const form = new FormData();
    form.append('file', new Blob([lines]), 'long.txt');
    const file = (await (await api('POST', `/v1/containers/${session.container_id}/files`, form)).json()) as {
      id: string;
    };
    const pdfPath = `/v1/containers/${session.container_id}/files/${file.id}/pdf`;
    // The gateway holds this request while the conversion runs; it only starts the conversion here.
    const first = api('GET', pdfPath).catch(() => undefined);
    await pollUntil(
      async () => Number((await exec('redis', ['redis-cli', 'LLEN', 'bull:preview:active'])).stdout.trim()) > 0,
      'conversion under way',
      60_000,
    );

    await handBackToTheSecond('worker-preview');
    const converted = await pollUntil(
      async () => {
        const res = await api('GET', pdfPath);
        return res.status === 200 ? Buffer.from(await res.arrayBuffer()) : null;
      },
      'preview converted by the other worker',
      180_000,
    );
    await first;
    expect(converted!.subarray(0, 5).toString()).toBe('%PDF-');
    const pending = await sql(
      `SELECT p.id FROM previews p JOIN container_files c ON c.object_id = p.source_object_id
        WHERE c.id = '${file.id}' AND p.status = 'PENDING'`,
    );
    expect(pending).toEqual([]);
    await expectNoOrphans();
  });
});
