import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { api, type ApiResponse, containerUpload, newSession } from '../support/api';
import { count, db, dbNow } from '../support/db';
import { pollUntil } from '../support/poll';
import { e2eStack, logLinesPerProcess, servedByEveryProcess } from '../support/replicas';

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
/** Each preview and archive asked this often at once: 30 requests, under one gateway's 32 downloads of a principal. */
const ASKED_TIMES = 5;
const total = (perProcess: number[]) => perProcess.reduce((sum, n) => sum + n, 0);

/** GET until the answer is not 202 (an archive still building says when to ask again). */
async function getUntilBuilt(path: string): Promise<ApiResponse> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const res = await api('GET', path);
    if (res.status !== 202 || Date.now() > deadline) return res;
    await sleep(Math.min(1000, Number(res.headers.get('retry-after') ?? 1) * 1000));
  }
}

/**
 * Many gateways and workers share the queues and the rows: the same previews and archives asked many times
 * at once, through every gateway (the replicas topology balances each request), are each built by one
 * worker once, and every asker gets the same bytes. With one process of each, the same holds.
 */
describe('previews and archives asked many times at once', () => {
  it('are each built exactly once, by one worker, and every request gets the same bytes', async () => {
    const since = await dbNow();
    const run = randomBytes(6).toString('hex');
    const previewSources = [
      { filename: 'notes.txt', type: 'text/plain', content: `plain ${run}\n` },
      { filename: 'notes.md', type: 'text/markdown', content: `# Markdown ${run}\n\nbody\n` },
      { filename: 'page.html', type: 'text/html', content: `<h1>Page ${run}</h1>` },
    ];
    const previews = [];
    for (const source of previewSources) {
      const session = await newSession();
      const file = await containerUpload(session.container_id, source.filename, source.content, { type: source.type });
      previews.push({ ...source, path: `/v1/containers/${session.container_id}/files/${file.id}/pdf` });
    }
    const archives = [];
    for (let i = 0; i < 3; i++) {
      const session = await newSession();
      await containerUpload(session.container_id, 'a.txt', `archive ${i} ${run}\n`, { type: 'text/plain' });
      await containerUpload(session.container_id, 'b.bin', randomBytes(64 * 1024));
      archives.push({ sessionId: session.id, path: `/v1/sessions/${session.id}/files/archive` });
    }
    const uploads = previews.length + 2 * archives.length;

    const asked = [...previews, ...archives].flatMap((item) => Array.from({ length: ASKED_TIMES }, () => item.path));
    const answers = await Promise.all(asked.map((path) => getUntilBuilt(path)));
    expect(answers.map((answer) => answer.status)).toEqual(asked.map(() => 200));
    for (const item of [...previews, ...archives]) {
      const bodies = answers.filter((_, i) => asked[i] === item.path).map((answer) => sha256(answer.body));
      expect(new Set(bodies).size, item.path).toBe(1);
    }

    const stack = e2eStack();
    for (const archive of archives) await servedByEveryProcess(stack, 'gateway', 'GET', archive.path);
    const previewIds: string[] = [];
    for (const preview of previews) {
      const { rows } = await db.query('SELECT id, status FROM previews WHERE sha256 = $1', [sha256(preview.content)]);
      expect(rows, preview.filename).toEqual([{ id: expect.any(String), status: 'READY' }]);
      previewIds.push(rows[0].id as string);
    }
    const archiveIds: string[] = [];
    for (const archive of archives) {
      const { rows } = await db.query('SELECT id, status FROM archives WHERE session_id = $1', [archive.sessionId]);
      expect(rows).toEqual([{ id: expect.any(String), status: 'ready' }]);
      archiveIds.push(rows[0].id as string);
    }
    // Each worker logs every build it finished; over all workers, one line per preview and per archive.
    const builds = () => ({
      previews: previewIds.map((id) =>
        total(logLinesPerProcess(stack, 'worker', 'preview converted', 'previewId', id)),
      ),
      archives: archiveIds.map((id) => total(logLinesPerProcess(stack, 'worker', 'archive built', 'archiveId', id))),
    });
    await pollUntil(
      async () => Object.values(builds()).every((lines) => lines.every((n) => n > 0)),
      'a build log line of every preview and archive',
    );
    expect(builds()).toEqual({ previews: previewIds.map(() => 1), archives: archiveIds.map(() => 1) });
    // No second build left an object behind: the uploads, one PDF per preview and one ZIP per archive.
    const objects = await count('SELECT count(*) FROM stored_objects WHERE created_at >= $1', [since]);
    expect(objects).toBe(uploads + previews.length + archives.length);
  });
});
