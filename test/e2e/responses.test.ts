import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, containerUpload, newSession, rawRequest, upload, type Who } from '../support/api';
import { count, db, dbNow, leftoversSince } from '../support/db';
import { agentPort, E2E_BASE_URL, E2E_PORT_BASE, TEST_AGENT_SERVICE_TOKEN } from '../support/env';
import { objectExists } from '../support/s3';
import { type AgentTaskBody, callWithToken, TestAgentService } from '../support/test-agent';
import { pollUntil } from '../support/poll';

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
const dataUrl = (type: string, data: Buffer | string) => `data:${type};base64,${Buffer.from(data).toString('base64')}`;
const text = (value: string) => ({ type: 'input_text', text: value });

async function respond(body: unknown, who: Who = 'alice') {
  return api('POST', '/v1/responses', { who, json: body });
}

async function completed(body: unknown, who: Who = 'alice') {
  const res = await respond(body, who);
  expect(res.status, res.body.toString()).toBe(200);
  expect(res.json.status, JSON.stringify(res.json.error)).toBe('completed');
  return res.json;
}

function annotations(response: any): any[] {
  return response.output.flatMap((item: any) => item.content.flatMap((c: any) => c.annotations));
}

async function download(url: string, who: Who = 'alice') {
  return api('GET', url.slice(E2E_BASE_URL.length), { who });
}

async function storageKeyOf(containerFileId: string): Promise<string> {
  const { rows } = await db.query(
    'SELECT o.storage_key FROM container_files f JOIN stored_objects o ON o.id = f.object_id WHERE f.id = $1',
    [containerFileId],
  );
  return rows[0].storage_key;
}

describe('responses with the built-in report agent', () => {
  it('takes inline and uploaded inputs and cites report.md, which lists each with bytes and sha256', async () => {
    const inline = Buffer.from('alpha,beta\n1,2\n');
    const uploaded = randomBytes(70_000);
    const file = await upload('by-id.bin', uploaded);
    const response = await completed({
      input: [
        {
          role: 'user',
          content: [
            text('Summarise these.'),
            { type: 'input_file', filename: 'table.csv', file_data: dataUrl('text/csv', inline) },
            { type: 'input_file', file_id: file.id },
          ],
        },
      ],
      metadata: { run: 'e2e' },
    });
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      agent: 'report',
      metadata: { run: 'e2e' },
      error: null,
    });
    expect(response.id).toMatch(/^resp_[0-9A-Za-z]{24}$/);
    expect(response.session_id).toMatch(/^sess_/);
    const message = response.output[0];
    expect(message).toMatchObject({ type: 'message', role: 'assistant' });
    expect(message.id).toMatch(/^msg_/);
    const [citation] = annotations(response);
    const outputText: string = message.content[0].text;
    expect(citation).toMatchObject({
      type: 'container_file_citation',
      container_id: response.container_id,
      filename: 'report.md',
    });
    expect(outputText.slice(citation.start_index, citation.end_index)).toBe('report.md');
    expect(citation.download_url).toBe(
      `${E2E_BASE_URL}/v1/containers/${response.container_id}/files/${citation.file_id}/content`,
    );

    const report = (await download(citation.download_url)).body.toString('utf8');
    expect(report).toContain(`- table.csv: ${inline.length} bytes, sha256 ${sha(inline)}, text/csv`);
    expect(report).toContain(
      `- by-id.bin: ${uploaded.length} bytes, sha256 ${sha(uploaded)}, application/octet-stream`,
    );
    expect(report).toContain('Summarise these.');
    expect(report).toContain('### First lines of table.csv');

    const artifact = await api('GET', `/v1/containers/${response.container_id}/files/${citation.file_id}`);
    expect(artifact.json).toMatchObject({
      source: 'assistant',
      response_id: response.id,
      filename: 'report.md',
      content_type: 'text/markdown; charset=utf-8',
    });

    // The inline input became a file object of the caller.
    const files = await api('GET', '/v1/files?limit=1000');
    expect(files.json.data.find((f: any) => f.filename === 'table.csv')).toMatchObject({
      bytes: inline.length,
      sha256: sha(inline),
      purpose: 'user_data',
    });

    const again = await api('GET', `/v1/responses/${response.id}`);
    expect(again.json).toEqual(response);
    expect((await api('GET', `/v1/responses/${response.id}`, { who: 'bob' })).status).toBe(404);
    expect((await download(citation.download_url, 'bob')).status).toBe(404);
  });

  it('picks report by model, ignores fields that change nothing, and refuses what it does not serve with param', async () => {
    const session = await newSession();
    const byModel = await completed({
      session_id: session.id,
      model: 'report',
      input: 'hello',
      temperature: 0.3,
      store: true,
      include: [],
      tools: [{ type: 'code_interpreter', container: { type: 'auto' } }],
    });
    expect(byModel.agent).toBe('report');
    expect((await completed({ session_id: session.id, model: 'gpt-5', input: 'hello' })).agent).toBe('report');
    const refusals: [unknown, string][] = [
      [{ stream: true }, 'stream'],
      [{ background: true }, 'background'],
      [{ previous_response_id: byModel.id }, 'previous_response_id'],
      [{ conversation: 'conv_1' }, 'conversation'],
      [{ tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      [{ agent: 'nope' }, 'agent'],
      [
        {
          input: [
            { role: 'user', content: [text('x'), { type: 'input_file', file_url: 'https://example.com/a.pdf' }] },
          ],
        },
        'input[0].content[1].file_url',
      ],
    ];
    for (const [extra, param] of refusals) {
      const res = await respond({ session_id: session.id, input: 'x', ...(extra as object) });
      expect([res.status, res.json.error.code, res.json.error.param], JSON.stringify(extra)).toEqual([
        400,
        'invalid_request',
        param,
      ]);
    }
  });

  it('rejects bad requests before any side effect: no file, object, session, response or artifact is left', async () => {
    const session = await newSession();
    const bobFile = await upload('bobs.txt', 'secret of bob', { who: 'bob' });
    const bobSession = await newSession('bob');
    const since = await dbNow();
    const sessionsBefore = await count('SELECT count(*) FROM sessions');
    const good = { type: 'input_file', filename: 'ok.txt', file_data: dataUrl('text/plain', 'fine') };
    const cases: [unknown, number, string, string | null][] = [
      [
        {
          input: [
            {
              role: 'user',
              content: [good, { type: 'input_file', filename: 'b.txt', file_data: 'data:text/plain,hello' }],
            },
          ],
        },
        400,
        'invalid_file_data',
        'input[0].content[1].file_data',
      ],
      [
        {
          input: [
            {
              role: 'user',
              content: [
                good,
                {
                  type: 'input_file',
                  filename: 'big.bin',
                  file_data: dataUrl('application/octet-stream', Buffer.alloc(1024 * 1024 + 1)),
                },
              ],
            },
          ],
        },
        413,
        'file_too_large',
        'input[0].content[1].file_data',
      ],
      [
        {
          input: [
            {
              role: 'user',
              content: [good, { type: 'input_file', filename: 'a\r\nb.txt', file_data: dataUrl('text/plain', 'x') }],
            },
          ],
        },
        400,
        'invalid_filename',
        'input[0].content[1].filename',
      ],
      [
        { input: [{ role: 'user', content: [good, { type: 'input_file', file_id: bobFile.id }] }] },
        404,
        'not_found',
        'input[0].content[1].file_id',
      ],
      [
        { input: [{ role: 'user', content: [good, { type: 'input_file', file_id: 'file_../../etc/passwd' }] }] },
        404,
        'not_found',
        'input[0].content[1].file_id',
      ],
      [{ session_id: bobSession.id, input: [{ role: 'user', content: [good] }] }, 404, 'not_found', 'session_id'],
      [{ session_id: 'sess_%2e%2e', input: 'x' }, 404, 'not_found', 'session_id'],
      [
        { session_id: session.id, input: [{ role: 'user', content: [good] }], stream: true },
        400,
        'invalid_request',
        'stream',
      ],
      [
        { input: [{ role: 'user', content: [good] }], agent: 'http', model: 'report', background: true },
        400,
        'invalid_request',
        'background',
      ],
    ];
    for (const [body, status, code, param] of cases) {
      const res = await respond(body);
      expect([res.status, res.json.error.code, res.json.error.param], JSON.stringify(body).slice(0, 160)).toEqual([
        status,
        code,
        param,
      ]);
      expect(res.body.toString()).not.toContain('secret of bob');
    }
    // A JSON body over max_request_bytes is refused from its Content-Length, before it is read.
    const tooLarge = await rawRequest('/v1/responses', {
      headers: { 'content-type': 'application/json', 'content-length': 64 * 1024 * 1024 },
      write: (req) => req.write('{"input":"'),
    });
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.body).error.code).toBe('request_too_large');
    // Chunked, so only counting can tell: answered as soon as the limit is passed, while the client still writes.
    const counted = await rawRequest('/v1/responses', {
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      write: (req) => req.write(`{"input":"${'a'.repeat(2 * 1024 * 1024)}`),
    });
    expect([counted.status, JSON.parse(counted.body).error.code]).toEqual([413, 'request_too_large']);

    expect(await leftoversSince(since)).toEqual({ objects: 0, files: 0, containerFiles: 0 });
    expect(await count('SELECT count(*) FROM sessions')).toBe(sessionsBefore);
    expect(await count('SELECT count(*) FROM responses WHERE created_at >= $1', [since])).toBe(0);
  });

  it('runs two responses in one session; the listing holds both reports and a container upload, oldest first', async () => {
    const session = await newSession();
    const first = await completed({ session_id: session.id, input: 'first task' });
    const second = await completed({
      session_id: session.id,
      input: [{ role: 'user', content: [text('second task')] }],
    });
    const uploaded = await containerUpload(session.container_id, 'notes.txt', 'by hand', { type: 'text/plain' });
    const [a, b] = [annotations(first)[0], annotations(second)[0]];
    expect(a.file_id).not.toBe(b.file_id);
    expect(first.container_id).toBe(session.container_id);
    const listing = await api('GET', `/v1/sessions/${session.id}/files`);
    expect(listing.json.files.map((f: any) => [f.id, f.source, f.response_id])).toEqual([
      [a.file_id, 'assistant', first.id],
      [b.file_id, 'assistant', second.id],
      [uploaded.id, 'user', null],
    ]);

    // Deleting one artifact: 404 at once, gone from the listing, its bytes purged; the rest stay.
    const key = await storageKeyOf(a.file_id);
    expect((await api('DELETE', `/v1/containers/${session.container_id}/files/${a.file_id}`)).json).toEqual({
      id: a.file_id,
      object: 'container.file.deleted',
      deleted: true,
    });
    expect((await download(a.download_url)).status).toBe(404);
    expect((await api('GET', `/v1/sessions/${session.id}/files`)).json.files.map((f: any) => f.id)).toEqual([
      b.file_id,
      uploaded.id,
    ]);
    await pollUntil(async () => !(await objectExists(key)), 'deleted artifact purged from the bucket', 60_000, 200);
    expect((await download(b.download_url)).status).toBe(200);
  });

  it('deleting the session makes it all 404 at once and purges its objects from the bucket within a minute', async () => {
    const response = await completed({
      input: [
        {
          role: 'user',
          content: [
            text('to be deleted'),
            { type: 'input_file', filename: 'in.txt', file_data: dataUrl('text/plain', 'kept as a file') },
          ],
        },
      ],
    });
    const citation = annotations(response)[0];
    const uploaded = await containerUpload(response.container_id, 'up.txt', 'uploaded');
    const keys = [await storageKeyOf(citation.file_id), await storageKeyOf(uploaded.id)];
    for (const key of keys) expect(await objectExists(key)).toBe(true);

    const deletedAt = Date.now();
    expect((await api('DELETE', `/v1/sessions/${response.session_id}`)).json).toEqual({
      id: response.session_id,
      object: 'session.deleted',
      deleted: true,
    });
    for (const path of [
      `/v1/sessions/${response.session_id}`,
      `/v1/sessions/${response.session_id}/files`,
      `/v1/containers/${response.container_id}`,
      `/v1/containers/${response.container_id}/files/${citation.file_id}`,
      `/v1/containers/${response.container_id}/files/${citation.file_id}/content`,
      `/v1/containers/${response.container_id}/files/${citation.file_id}/pdf`,
      `/v1/responses/${response.id}`,
    ]) {
      expect((await api('GET', path)).status, path).toBe(404);
    }
    await pollUntil(
      async () => !(await objectExists(keys[0])) && !(await objectExists(keys[1])),
      'session objects purged from the bucket',
      60_000,
      200,
    );
    const purgeDelayMs = Date.now() - deletedAt;
    console.log(`purge delay after session deletion: ${purgeDelayMs} ms`);
    expect(purgeDelayMs).toBeLessThan(60_000);
    // The inline input is a file of the principal, not of the session: it survives.
    const inputFile = (await api('GET', '/v1/files?limit=1000')).json.data.find((f: any) => f.filename === 'in.txt');
    expect((await api('GET', `/v1/files/${inputFile.id}/content`)).body.toString()).toBe('kept as a file');
  });
});

describe('responses with the http agent and its task token', () => {
  const agent = new TestAgentService(agentPort(E2E_PORT_BASE));
  beforeAll(() => agent.start());
  afterAll(() => agent.stop());

  it('hands the agent its inputs and a scoped token; the artifacts it uploads are cited and listed', async () => {
    const input = randomBytes(30_000);
    const file = await upload('input.bin', input);
    const other = await upload('not-an-input.txt', 'private');
    const session = await newSession();
    const otherSession = await newSession();
    const probes: Record<string, number> = {};
    let seenAuth: string | undefined;
    agent.behave(async (task, headers) => {
      seenAuth = headers.authorization;
      const body = Buffer.from(await (await callWithToken(task, task.files[0].download_url)).arrayBuffer());
      const form = new FormData();
      form.append(
        'file',
        new Blob([`${task.files[0].filename} ${sha(body)}\n`], { type: 'text/plain' }),
        'summary.txt',
      );
      const uploaded = (await (
        await callWithToken(task, task.api.container_files_url, { method: 'POST', body: form })
      ).json()) as { id: string };
      const api = task.api.base_url;
      probes.ownList = (await callWithToken(task, `${api}/containers/${task.container_id}/files`)).status;
      probes.otherFile = (await callWithToken(task, `${api}/files/${other.id}/content`)).status;
      probes.otherContainer = (
        await callWithToken(task, `${api}/containers/${otherSession.container_id}/files`)
      ).status;
      probes.sessions = (await callWithToken(task, `${api}/sessions`)).status;
      probes.deleteInput = (await callWithToken(task, `${api}/files/${task.files[0].id}`, { method: 'DELETE' })).status;
      probes.responses = (
        await callWithToken(task, `${api}/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"input":"x"}',
        })
      ).status;
      const answer = `Wrote summary.txt for ${task.files[0].filename}.`;
      return { body: { text: answer, citations: [{ file_id: uploaded.id, start_index: 6, end_index: 17 }] } };
    });
    const response = await completed({
      session_id: session.id,
      agent: 'http',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: [text('Summarise'), { type: 'input_file', file_id: file.id }] }],
    });

    const task = agent.tasks.at(-1)!;
    expect(seenAuth).toBe(`Bearer ${TEST_AGENT_SERVICE_TOKEN}`);
    expect(task).toMatchObject({
      object: 'agent.task',
      response_id: response.id,
      session_id: session.id,
      container_id: session.container_id,
      instructions: 'Be brief.',
      input: [{ role: 'user', text: 'Summarise' }],
    });
    expect(task.files).toEqual([
      {
        id: file.id,
        filename: 'input.bin',
        bytes: input.length,
        content_type: 'application/octet-stream',
        sha256: sha(input),
        download_url: `${E2E_BASE_URL}/v1/files/${file.id}/content`,
      },
    ]);
    expect(task.api.token).toMatch(/^uhp_task_/);
    expect(probes).toEqual({
      ownList: 200,
      otherFile: 404,
      otherContainer: 404,
      sessions: 401,
      deleteInput: 401,
      responses: 401,
    });

    const [citation] = annotations(response);
    expect(citation).toMatchObject({
      filename: 'summary.txt',
      container_id: session.container_id,
      start_index: 6,
      end_index: 17,
    });
    expect((await download(citation.download_url)).body.toString()).toBe(`input.bin ${sha(input)}\n`);
    const listed = (await api('GET', `/v1/sessions/${session.id}/files`)).json.files;
    expect(listed).toEqual([
      expect.objectContaining({ id: citation.file_id, source: 'assistant', response_id: response.id }),
    ]);

    // The token died with the response.
    expect((await callWithToken(task, `${task.api.base_url}/containers/${task.container_id}/files`)).status).toBe(401);
  });

  async function failedWith(behaviour: Parameters<TestAgentService['behave']>[0]) {
    agent.behave(behaviour);
    const session = await newSession();
    const res = await respond({ session_id: session.id, agent: 'http', input: 'x' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'failed', output: [] });
    return res.json.error as { code: string; message: string };
  }

  it('fails the response, output still an array, when the agent errs, lies about citations or times out', async () => {
    expect((await failedWith(async () => ({ status: 500, body: { oops: true } }))).code).toBe('agent_error');
    expect((await failedWith(async () => ({ body: 'not json' }))).code).toBe('agent_invalid_output');
    expect(
      (
        await failedWith(async () => ({
          body: {
            text: 'short',
            citations: [{ file_id: 'file_000000000000000000000000', start_index: 0, end_index: 3 }],
          },
        }))
      ).code,
    ).toBe('agent_invalid_output');
    const outside = await failedWith(async (task: AgentTaskBody) => {
      const form = new FormData();
      form.append('file', new Blob(['x']), 'a.txt');
      const uploaded = (await (
        await callWithToken(task, task.api.container_files_url, { method: 'POST', body: form })
      ).json()) as { id: string };
      return { body: { text: 'abc', citations: [{ file_id: uploaded.id, start_index: 1, end_index: 4 }] } };
    });
    expect(outside).toMatchObject({
      code: 'agent_invalid_output',
      message: expect.stringContaining('not inside the text'),
    });
    expect((await failedWith(async () => 'hang')).code).toBe('agent_timeout');
  });

  it('fails the response when the agent service cannot be reached', async () => {
    await agent.stop();
    try {
      const session = await newSession();
      const res = await respond({ session_id: session.id, agent: 'http', input: 'x' });
      expect(res.json).toMatchObject({ status: 'failed', output: [], error: { code: 'agent_unreachable' } });
    } finally {
      await agent.start();
    }
  });
});
