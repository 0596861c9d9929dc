import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, containerUpload, newSession } from '../support/api';
import { db } from '../support/db';
import { E2E_PORT_BASE, ownQueues, TEST_DATABASE_URL, testPort } from '../support/env';
import { pollUntil } from '../support/poll';
import { e2eStack, metricsPerProcess } from '../support/replicas';
import { docx, paragraph, pdfText } from '../support/preview-fixtures';
import { deleteObject, objectExists } from '../support/s3';
import { Stack } from '../support/stack';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'uhp-e2e-previews-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function textOf(pdf: Buffer): Promise<string> {
  const path = join(dir, `${randomBytes(6).toString('hex')}.pdf`);
  await writeFile(path, pdf);
  return pdfText(path);
}

/** Conversions the e2e workers have done so far, from each one's own metrics. */
async function conversions(): Promise<number> {
  return (await metricsPerProcess(e2eStack(), 'worker'))
    .flatMap((text) => text.split('\n'))
    .filter((line) => line.startsWith('uhp_preview_conversions_total{'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** The shared e2e stack's workers: the processes running the built worker with one of its WORKER_PORTs. */
function e2eWorkerPids(): number[] {
  const ports = e2eStack()
    .replicaPorts('worker')
    .map((port) => `WORKER_PORT=${port}`);
  const pids = [];
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (cmdline.includes('apps/worker/src/main.js') && ports.some((port) => environ.includes(port)))
        pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  if (pids.length !== ports.length) throw new Error(`${pids.length} e2e workers running, not ${ports.length}`);
  return pids;
}

async function artifact(filename: string, data: Buffer | string, type?: string) {
  const session = await newSession();
  const file = await containerUpload(session.container_id, filename, data, { type });
  return { session, file, path: `/v1/containers/${session.container_id}/files/${file.id}/pdf` };
}

describe('PDF previews through the worker', () => {
  it('converts text and an office document, served inline with the download headers', async () => {
    const marker = `preview-${randomBytes(4).toString('hex')}`;
    const text = await artifact('notes.txt', `first line ${marker}\nsecond line\n`, 'text/plain');
    const res = await api('GET', text.path);
    expect(res.status, res.body.toString().slice(0, 300)).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-disposition')).toBe('inline; filename="notes.pdf"');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(res.body.subarray(0, 5).toString()).toBe('%PDF-');
    expect(await textOf(res.body)).toContain(marker);

    const word = await artifact('memo.docx', docx(paragraph(`Quarterly memo ${marker}`)));
    const pdf = await api('GET', word.path);
    expect(pdf.status).toBe(200);
    expect(await textOf(pdf.body)).toContain(`Quarterly memo ${marker}`);
  });

  it('serves a cached preview without converting again, with ETag and ranges', async () => {
    const { path } = await artifact('cached.md', `# Cached ${randomBytes(4).toString('hex')}\n\nbody`);
    const first = await api('GET', path);
    expect(first.status).toBe(200);
    const before = await conversions();
    const second = await api('GET', path);
    expect(second.body.equals(first.body)).toBe(true);
    expect(await conversions()).toBe(before);
    const etag = second.headers.get('etag')!;
    expect((await api('GET', path, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const range = await api('GET', path, { headers: { range: 'bytes=0-4' } });
    expect([range.status, range.body.toString()]).toEqual([206, '%PDF-']);
  });

  it('converts identical content once for 20 concurrent requests, and once for two artifacts with the same bytes', async () => {
    const content = `<h1>Shared ${randomBytes(6).toString('hex')}</h1>`;
    const one = await artifact('shared.html', content, 'text/html');
    const two = await artifact('copy.html', content, 'text/html');
    const before = await conversions();
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, () => api('GET', one.path)),
      api('GET', two.path),
    ]);
    expect(answers.map((a) => a.status)).toEqual(Array(21).fill(200));
    expect(new Set(answers.map((a) => a.body.toString('base64'))).size).toBe(1);
    expect(await conversions()).toBe(before + 1);
  });

  it('converts an image in a renderer process of its own: the worker never loads libvips', async () => {
    const background = `#${randomBytes(3).toString('hex')}`; // content of this run's own: previews are cached by content
    const png = await sharp({ create: { width: 240, height: 90, channels: 3, background } })
      .png()
      .toBuffer();
    const { path } = await artifact('chart.png', png, 'image/png');
    const res = await api('GET', path);
    expect(res.status).toBe(200);
    const pdf = join(dir, 'chart.pdf');
    await writeFile(pdf, res.body);
    expect(execFileSync('pdfimages', ['-list', pdf], { encoding: 'utf8' })).toMatch(/\s240\s+90\s/);
    for (const pid of e2eWorkerPids()) expect(readFileSync(`/proc/${pid}/maps`, 'utf8')).not.toContain('libvips');
  });

  it('serves a PDF as is', async () => {
    const original = (await api('GET', (await artifact('notes.txt', 'make me a pdf')).path)).body;
    const { path } = await artifact('given.pdf', original, 'application/pdf');
    const res = await api('GET', path);
    expect([res.status, res.headers.get('content-disposition')]).toEqual([200, 'inline; filename="given.pdf"']);
    expect(res.body.equals(original)).toBe(true);
  });

  it('answers 502 preview_failed with the reason, without retrying, for a corrupt document and an unsupported type', async () => {
    const corrupt = await artifact('broken.docx', randomBytes(4096));
    const failed = await api('GET', corrupt.path);
    expect(failed.status).toBe(502);
    expect(failed.json.error).toMatchObject({ type: 'server_error', code: 'preview_failed' });
    // The class and its fixed sentence: no path of the worker's, no converter output, no exception text.
    expect(failed.json.error.message).toBe(
      'The file could not be converted to PDF (corrupt_document): ' +
        'The file could not be read as the type of document its name or content type says it is.',
    );
    expect(failed.headers.get('x-should-retry')).toBe('false');
    const before = await conversions();
    expect((await api('GET', corrupt.path)).status).toBe(502);
    expect(await conversions()).toBe(before);

    const archive = await artifact('bundle.zip', randomBytes(100), 'application/zip');
    const unsupported = await api('GET', archive.path);
    expect([unsupported.status, unsupported.json.error.code, unsupported.headers.get('x-should-retry')]).toEqual([
      502,
      'preview_failed',
      'false',
    ]);
  });

  it("reports how the worker's converters are confined: /readyz, and the uhp_preview_isolation gauge", async () => {
    const ready = (await (await fetch(`http://127.0.0.1:${E2E_PORT_BASE + 2}/readyz`)).json()) as {
      previews: { isolation: { network: string; filesystem: string; chromiumSandbox: boolean; landlockAbi: number } };
    };
    const { isolation } = ready.previews;
    expect(['namespace', 'seccomp', 'none']).toContain(isolation.network);
    expect(['uid', 'landlock', 'none']).toContain(isolation.filesystem);
    // This machine runs the tests as root with namespaces: the strongest mode.
    if (process.getuid?.() === 0)
      expect(isolation).toMatchObject({ network: 'namespace', filesystem: 'uid', chromiumSandbox: true });
    const metrics = await (await fetch(`http://127.0.0.1:${E2E_PORT_BASE + 2}/metrics`)).text();
    const series = metrics.split('\n').filter((line) => line.startsWith('uhp_preview_isolation{'));
    expect(series).toHaveLength(1);
    expect(series[0]).toContain(
      `network="${isolation.network}",filesystem="${isolation.filesystem}",chromium_sandbox="${isolation.chromiumSandbox}"`,
    );
    expect(series[0]).toMatch(/} 1$/);
  });

  it('renders HTML with scripts off and no request leaving the worker', async () => {
    let requests = 0;
    const server: Server = createServer((_req, res) => {
      requests++;
      res.end('tracked');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const html = `<h1>Hostile page</h1><img src="http://127.0.0.1:${port}/pixel.png"><iframe src="file:///etc/passwd"></iframe><script>document.body.innerHTML = 'SCRIPT RAN'</script>`;
      const res = await api('GET', (await artifact('hostile.html', html, 'text/html')).path);
      expect(res.status).toBe(200);
      const text = await textOf(res.body);
      expect(text).toContain('Hostile page');
      expect(text).not.toContain('SCRIPT RAN');
      expect(text).not.toContain('root:');
      expect(requests).toBe(0);
    } finally {
      server.close();
    }
  });

  it('converts again once when the cached PDF has left the bucket, however many ask at once', async () => {
    const marker = `lost-${randomBytes(6).toString('hex')}`;
    const { file, path } = await artifact('lost.txt', marker, 'text/plain');
    expect((await api('GET', path)).status).toBe(200);
    const { rows } = await db.query(
      'SELECT o.id, o.storage_key FROM previews p JOIN stored_objects o ON o.id = p.object_id WHERE p.sha256 = $1',
      [file.sha256],
    );
    expect(rows).toHaveLength(1);
    await deleteObject(rows[0].storage_key);
    const before = await conversions();
    const answers = await Promise.all(Array.from({ length: 8 }, () => api('GET', path)));
    const lost = answers.filter((answer) => answer.status === 502);
    // Whoever read the lost row hears a retryable 502; whoever came after it is served the new PDF.
    expect(lost.length).toBeGreaterThan(0);
    expect(answers.filter((answer) => answer.status !== 502).map((answer) => answer.status)).toEqual(
      Array(answers.length - lost.length).fill(200),
    );
    for (const answer of lost) {
      expect(answer.json.error).toMatchObject({ type: 'server_error', code: 'preview_failed' });
      expect(answer.json.error.message).toMatch(/missing from storage/);
      expect(answer.headers.get('x-should-retry')).toBeNull();
      // An error, not the PDF: none of the lost file's own headers.
      expect([answer.headers.get('etag'), answer.headers.get('content-disposition')]).toEqual([null, null]);
    }
    const again = await api('GET', path);
    expect(again.status).toBe(200);
    expect(await textOf(again.body)).toContain(marker);
    expect(await conversions()).toBe(before + 1);
    // One previews row again, its new PDF in the bucket.
    const now = await db.query(
      'SELECT o.storage_key FROM previews p JOIN stored_objects o ON o.id = p.object_id WHERE p.sha256 = $1',
      [file.sha256],
    );
    expect(now.rows).toHaveLength(1);
    expect(now.rows[0].storage_key).not.toBe(rows[0].storage_key);
    expect(await objectExists(now.rows[0].storage_key)).toBe(true);
    // The lost PDF's object lost its one reference: the purge takes its row (and a key that is no longer there).
    await pollUntil(
      async () =>
        (await db.query('SELECT 1 FROM stored_objects WHERE id = $1 AND ref_count > 0', [rows[0].id])).rowCount === 0,
      "the lost PDF's object released",
      20_000,
    );
  });

  it('keeps previews in scope, and purges a preview once no artifact has its content', async () => {
    const { session, file, path } = await artifact('scoped.txt', `scoped ${randomBytes(6).toString('hex')}`);
    expect((await api('GET', path)).status).toBe(200);
    expect((await api('GET', path, { who: 'bob' })).status).toBe(404);
    const { rows } = await db.query(
      'SELECT o.storage_key FROM previews p JOIN stored_objects o ON o.id = p.object_id WHERE p.sha256 = $1',
      [file.sha256],
    );
    expect(rows).toHaveLength(1);
    expect(await objectExists(rows[0].storage_key)).toBe(true);
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
    expect((await api('GET', path)).status).toBe(404);
    await pollUntil(
      async () => !(await objectExists(rows[0].storage_key)),
      "the preview's PDF purged from the bucket",
      60_000,
      250,
    );
    expect((await db.query('SELECT count(*)::int AS n FROM previews WHERE sha256 = $1', [file.sha256])).rows[0].n).toBe(
      0,
    );
  });
});

describe('previews turned off', () => {
  const stack = new Stack(testPort(18880), { PREVIEW_ENABLED: 'false' });
  beforeAll(() => stack.start(['storage', 'gateway']));
  afterAll(() => stack.stop());

  it('answers 501 preview_unavailable with x-should-retry: false, and /v1/limits says so', async () => {
    const session = (await api('POST', '/v1/sessions', { json: {}, base: stack.baseUrl })).json;
    const form = new FormData();
    form.append('file', new Blob(['text']), 'doc.txt');
    const file = (await api('POST', `/v1/containers/${session.container_id}/files`, { form, base: stack.baseUrl }))
      .json;
    const res = await api('GET', `/v1/containers/${session.container_id}/files/${file.id}/pdf`, {
      base: stack.baseUrl,
    });
    expect(res.status).toBe(501);
    expect(res.json.error).toMatchObject({ type: 'not_implemented_error', code: 'preview_unavailable' });
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect((await api('GET', '/v1/limits', { base: stack.baseUrl })).json.preview).toMatchObject({
      enabled: false,
      formats: [],
    });
  });
});

describe('previews on, but no worker has recorded a converter', () => {
  // Its own database (the shared one's converter_status says every converter works), and no worker.
  const databaseUrl = `${TEST_DATABASE_URL}_noconv`;
  const database = new URL(databaseUrl).pathname.slice(1);
  const admin = (sql: string) =>
    execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', 'postgres', '-qc', sql]);
  const stack = new Stack(testPort(19280), { DATABASE_URL: databaseUrl });
  beforeAll(async () => {
    // FORCE: a PgBouncer in front (UHP_E2E_TOPOLOGY) keeps its server connections after its clients left.
    admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    admin(`CREATE DATABASE ${database}`);
    const schema = execFileSync('pg_dump', [
      '-h',
      '127.0.0.1',
      '-U',
      'postgres',
      '--schema-only',
      '--no-owner',
      new URL(TEST_DATABASE_URL).pathname.slice(1),
    ]);
    execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', database, '-q', '-v', 'ON_ERROR_STOP=1'], {
      input: schema,
    });
    await stack.start(['storage', 'gateway']);
  });
  afterAll(async () => {
    await stack.stop();
    admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it('answers 501 preview_unavailable naming the missing converter, and /v1/limits lists no formats', async () => {
    const session = (await api('POST', '/v1/sessions', { json: {}, base: stack.baseUrl })).json;
    const form = new FormData();
    form.append('file', new Blob(['a memo']), 'memo.docx');
    const file = (await api('POST', `/v1/containers/${session.container_id}/files`, { form, base: stack.baseUrl }))
      .json;
    const res = await api('GET', `/v1/containers/${session.container_id}/files/${file.id}/pdf`, {
      base: stack.baseUrl,
    });
    expect(res.status).toBe(501);
    expect(res.json.error).toMatchObject({ code: 'preview_unavailable', message: expect.stringContaining('office') });
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect((await api('GET', '/v1/limits', { base: stack.baseUrl })).json.preview).toMatchObject({
      enabled: false,
      formats: [],
    });
  });
});

describe('fair queues: one principal’s backlog does not hold up another’s first preview', () => {
  // Queues of its own, so only its own workers, each converting one document at a time, take its jobs.
  const stack = new Stack(testPort(19680), {
    ...ownQueues('fair-previews'),
    PREVIEW_CONCURRENCY: '1',
    PREVIEW_TIMEOUT_MS: '1000',
  });
  const base = () => `http://127.0.0.1:${stack.port('gateway')}`;
  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  async function previewRow(who: 'alice' | 'bob', marker: string) {
    const session = (await api('POST', '/v1/sessions', { who, json: {}, base: base() })).json;
    const form = new FormData();
    form.append('file', new Blob([`${marker}\n${randomBytes(8).toString('hex')}\n`]), `${marker}.txt`);
    const file = (await api('POST', `/v1/containers/${session.container_id}/files`, { who, form, base: base() })).json;
    return {
      session,
      file,
      request: () => api('GET', `/v1/containers/${session.container_id}/files/${file.id}/pdf`, { who, base: base() }),
    };
  }

  it('B’s first preview is converted after at most the conversion running when it asked', async () => {
    const backlog = await Promise.all(Array.from({ length: 6 }, (_, i) => previewRow('alice', `alice-${i}`)));
    const first = await previewRow('bob', 'bob-first');
    // A queues six (they answer a retryable 502 after the 1 s wait and go on converting), then B asks.
    await Promise.all(backlog.map((item) => item.request()));
    await first.request();
    // When B's preview was queued: its row is created just before its job.
    const bobQueued = (
      await db.query(
        `SELECT p.created_at FROM previews p JOIN container_files c ON c.principal_id = p.principal_id AND c.sha256 = p.sha256 WHERE c.id = $1`,
        [first.file.id],
      )
    ).rows[0].created_at.getTime();
    const readyAt = async (fileIds: string[]) => {
      const { rows } = await db.query(
        `SELECT c.id, p.updated_at FROM previews p JOIN container_files c ON c.principal_id = p.principal_id AND c.sha256 = p.sha256
          WHERE c.id = ANY($1) AND p.status = 'READY'`,
        [fileIds],
      );
      return new Map(rows.map((row) => [row.id as string, (row.updated_at as Date).getTime()]));
    };
    const ids = [...backlog.map((item) => item.file.id), first.file.id];
    const ready = await pollUntil(
      async () => {
        const map = await readyAt(ids);
        return map.size === ids.length ? map : null;
      },
      'all seven previews converted',
      90_000,
    );
    const bobReady = ready!.get(first.file.id)!;
    // Of A's previews still waiting when B's was queued, at most the one converting then finishes before B's.
    // With more worker processes, one converting on each; and while B's converts, each of the others may take
    // and finish one more of A's (B's was still taken first).
    const workers = stack.replicaPorts('worker').length;
    const aliceInBetween = backlog.filter(
      (item) => ready!.get(item.file.id)! > bobQueued && ready!.get(item.file.id)! < bobReady,
    ).length;
    const aliceAfter = backlog.filter((item) => ready!.get(item.file.id)! > bobReady).length;
    expect(aliceInBetween).toBeLessThanOrEqual(2 * workers - 1);
    expect(aliceAfter).toBeGreaterThan(0);
    expect((await first.request()).status).toBe(200);
  });
});
