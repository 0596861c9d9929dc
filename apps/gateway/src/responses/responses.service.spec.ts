import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fileUpload, gatewayServices, readDownload } from '../../../../test/fakes/gateway';
import { AgentFailure, type Agent } from '../agents/agent.port';
import { ReportAgent } from '../agents/report.agent';

const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';
const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const dataUrl = (text: string) => `data:text/plain;base64,${Buffer.from(text).toString('base64')}`;
const input = (...content: object[]) => [
  { role: 'user', content: [{ type: 'input_text', text: 'Summarise.' }, ...content] },
];

/** An agent that fails the way the test says, after writing nothing. */
const failing = (failure: Error): Agent => ({
  name: 'failing',
  unavailableReason: () => null,
  run: async () => Promise.reject(failure),
});

describe('ResponsesService', () => {
  it('runs the report agent on inline and uploaded inputs; the report cites a file of the session', async () => {
    const world = gatewayServices();
    const uploaded = await world.files.upload(ALICE, fileUpload('upload.txt', 'uploaded bytes'));
    const response = await world.responses.create(ALICE, {
      input: input(
        { type: 'input_file', filename: 'inline.txt', file_data: dataUrl('inline bytes') },
        { type: 'input_file', file_id: uploaded.id },
      ),
    });
    expect(response.status).toBe('completed');
    expect(response.inputFileIds).toHaveLength(2);
    const [citation] = response.output!.citations;
    expect(citation.filename).toBe('report.md');
    const report = (
      await readDownload(await world.containerFiles.download(ALICE, response.containerId, citation.file_id))
    ).toString();
    expect(report).toContain(`inline.txt: 12 bytes, sha256 ${sha256('inline bytes')}`);
    expect(report).toContain(`upload.txt: 14 bytes, sha256 ${sha256('uploaded bytes')}`);
    expect((await world.files.list(ALICE, { limit: 10, order: 'asc' })).items.map((file) => file.filename)).toEqual([
      'upload.txt',
      'inline.txt',
    ]);
    expect((await world.responses.get(ALICE, response.id)).status).toBe('completed');
    await expect(world.responses.get(BOB, response.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it.each([
    [
      'an unknown session',
      { session_id: 'sess_000000000000000000000000', input: 'x' },
      { code: 'not_found', param: 'session_id' },
    ],
    ['a file_id of another principal', 'bob-file', { code: 'not_found', param: 'input[0].content[2].file_id' }],
    [
      'an inline file over the limit',
      { input: input({ type: 'input_file', filename: 'big.txt', file_data: dataUrl('x'.repeat(65_537)) }) },
      { code: 'file_too_large' },
    ],
    [
      'a malformed data URL',
      { input: input({ type: 'input_file', filename: 'a.txt', file_data: 'data:text/plain;base64,%%%' }) },
      { code: 'invalid_file_data' },
    ],
    ['stream: true', { input: 'x', stream: true }, { code: 'invalid_request', param: 'stream' }],
  ])('refuses %s before anything is written', async (_case, body, error) => {
    const world = gatewayServices();
    const bobFile = await world.files.upload(BOB, fileUpload('theirs.txt', 'theirs'));
    const request =
      body === 'bob-file'
        ? {
            input: input(
              { type: 'input_file', filename: 'a.txt', file_data: dataUrl('mine') },
              { type: 'input_file', file_id: bobFile.id },
            ),
          }
        : body;
    const objectsBefore = world.platform.store.objects.size;
    await expect(world.responses.create(ALICE, request)).rejects.toMatchObject(error);
    const t = world.platform.memory.tables;
    expect({
      sessions: t.sessions.length,
      responses: t.responses.length,
      artifacts: t.containerFiles.length,
      aliceFiles: t.files.filter((file) => file.principalId === ALICE).length,
    }).toEqual({ sessions: 0, responses: 0, artifacts: 0, aliceFiles: 0 });
    expect(world.platform.store.objects.size).toBe(objectsBefore);
  });

  it('a failing agent ends the response failed with its code, and an empty output', async () => {
    const world = gatewayServices({ agents: [failing(new AgentFailure('agent_unreachable', 'no agent service'))] });
    const response = await world.responses.create(ALICE, { input: 'x' });
    expect(response).toMatchObject({
      status: 'failed',
      output: null,
      error: { code: 'agent_unreachable', message: 'no agent service' },
    });
    const broken = gatewayServices({ agents: [failing(new Error('/internal/path exploded'))] });
    const hidden = await broken.responses.create(ALICE, { input: 'x' });
    expect(hidden.error).toEqual({ code: 'agent_error', message: 'The agent failed.' });
  });

  it('an agent past its deadline is cut off as agent_timeout', async () => {
    const slow: Agent = { name: 'slow', unavailableReason: () => null, run: () => new Promise<never>(() => undefined) };
    const world = gatewayServices({ agents: [slow], config: { AGENT_TIMEOUT_MS: '1000' } });
    const response = await world.responses.create(ALICE, { input: 'x' });
    expect(response.error).toMatchObject({ code: 'agent_timeout' });
  });

  it('runs in the given session, and answers 404 for one deleted before the run', async () => {
    const world = gatewayServices({ agents: [new ReportAgent()] });
    const session = await world.sessions.create(ALICE, {});
    const response = await world.responses.create(ALICE, { session_id: session.id, input: 'x' });
    expect(response).toMatchObject({ sessionId: session.id, containerId: session.currentContainerId });
    await world.sessions.delete(ALICE, session.id);
    await expect(world.responses.create(ALICE, { session_id: session.id, input: 'x' })).rejects.toMatchObject({
      code: 'not_found',
      param: 'session_id',
    });
    await expect(world.responses.get(ALICE, response.id)).rejects.toMatchObject({ code: 'not_found' });
  });
});
