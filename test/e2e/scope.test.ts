import { describe, expect, it } from 'vitest';
import { api, containerUpload, newSession, rawGet, upload } from '../support/api';

const notFound = { type: 'not_found_error', code: 'not_found' };

describe('scope: another principal, the wrong container, malformed and traversal ids', () => {
  it('B gets the same 404 as for a missing thing, never the bytes', async () => {
    const session = await newSession('alice');
    const secret = `alice-secret-${Date.now()}`;
    const artifact = await containerUpload(session.container_id, 'private.txt', secret);
    const file = await upload('private-upload.txt', secret);
    const paths = [
      `/v1/sessions/${session.id}`,
      `/v1/sessions/${session.id}/files`,
      `/v1/containers/${session.container_id}`,
      `/v1/containers/${session.container_id}/files`,
      `/v1/containers/${session.container_id}/files/${artifact.id}`,
      `/v1/containers/${session.container_id}/files/${artifact.id}/content`,
      `/v1/containers/${session.container_id}/files/${artifact.id}/pdf`,
      `/v1/files/${file.id}`,
      `/v1/files/${file.id}/content`,
    ];
    const missing = await api('GET', '/v1/files/file_000000000000000000000000', { who: 'bob' });
    for (const path of paths) {
      const res = await api('GET', path, { who: 'bob' });
      expect(res.status, path).toBe(404);
      expect(res.json.error, path).toMatchObject(notFound);
      expect(res.body.toString()).not.toContain(secret);
      expect(res.json.error.message === missing.json.error.message || /No such/.test(res.json.error.message)).toBe(
        true,
      );
    }
    expect((await api('DELETE', `/v1/sessions/${session.id}`, { who: 'bob' })).status).toBe(404);
    expect(
      (await api('DELETE', `/v1/containers/${session.container_id}/files/${artifact.id}`, { who: 'bob' })).status,
    ).toBe(404);
    expect((await api('DELETE', `/v1/files/${file.id}`, { who: 'bob' })).status).toBe(404);
    expect(
      (await api('POST', `/v1/containers/${session.container_id}/files`, { who: 'bob', json: { file_id: file.id } }))
        .status,
    ).toBe(404);
    // A's things survive B's attempts.
    expect(
      (await api('GET', `/v1/containers/${session.container_id}/files/${artifact.id}/content`)).body.toString(),
    ).toBe(secret);
    const bobFiles = await api('GET', '/v1/files?limit=1000', { who: 'bob' });
    expect(bobFiles.json.data.map((f: { id: string }) => f.id)).not.toContain(file.id);
    const bobSessions = await api('GET', '/v1/sessions?limit=1000', { who: 'bob' });
    expect(bobSessions.json.data.map((s: { id: string }) => s.id)).not.toContain(session.id);
  });

  it('a response, its session and its inputs are A’s alone: B gets the same 404 body as for a missing or malformed id', async () => {
    const secret = `alice-response-secret-${Date.now()}`;
    const file = await upload('input.txt', secret);
    const session = await newSession('alice');
    const done = await api('POST', '/v1/responses', {
      json: {
        session_id: session.id,
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'x' },
              { type: 'input_file', file_id: file.id },
            ],
          },
        ],
      },
    });
    expect(done.json.status).toBe('completed');
    const bodies = new Set<string>();
    for (const path of [
      `/v1/responses/${done.json.id}`,
      '/v1/responses/resp_000000000000000000000000',
      '/v1/responses/resp_..%2f..%2fetc',
      '/v1/responses/resp_x',
    ]) {
      const res = await rawGet(path, 'bob');
      expect(res.status, path).toBe(404);
      expect(res.body).not.toContain(secret);
      bodies.add(res.body);
    }
    expect(bodies.size).toBe(1);
    const asBob = async (body: object) => (await api('POST', '/v1/responses', { who: 'bob', json: body })).json.error;
    expect(await asBob({ session_id: session.id, input: 'x' })).toMatchObject({ ...notFound, param: 'session_id' });
    expect(
      await asBob({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: file.id }] }] }),
    ).toMatchObject({ ...notFound, param: 'input[0].content[0].file_id' });
    const report = await api('GET', new URL(done.json.output[0].content[0].annotations[0].download_url).pathname, {
      who: 'bob',
    });
    expect(report.status).toBe(404);
  });

  it('B cannot copy its file into A’s container, nor A copy B’s file', async () => {
    const session = await newSession('alice');
    const bobFile = await upload('bob.txt', 'bob', { who: 'bob' });
    expect(
      (await api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: bobFile.id } })).json.error,
    ).toMatchObject({ ...notFound, param: 'file_id' });
  });

  it('a file id is reachable only under its own container', async () => {
    const one = await newSession();
    const two = await newSession();
    const artifact = await containerUpload(two.container_id, 'two.txt', 'two');
    const uploaded = await upload('plain.txt', 'plain');
    for (const path of [
      `/v1/containers/${one.container_id}/files/${artifact.id}/content`,
      `/v1/containers/${one.container_id}/files/${artifact.id}`,
      `/v1/containers/${one.container_id}/files/${uploaded.id}/content`,
    ]) {
      expect((await api('GET', path)).status, path).toBe(404);
    }
  });

  // Each path starts under container `from` (A's other, empty container) and aims at file `f` in container `to`.
  it.each([
    [
      '..%2f',
      (from: string, to: string, f: string) => `/v1/containers/${from}/files/..%2f..%2f${to}%2ffiles%2f${f}/content`,
    ],
    [
      '%2e%2e segments',
      (from: string, to: string, f: string) => `/v1/containers/${from}/files/%2e%2e/%2e%2e/${to}/files/${f}/content`,
    ],
    [
      'raw ../ segments',
      (from: string, to: string, f: string) => `/v1/containers/${from}/files/../../${to}/files/${f}/content`,
    ],
    [
      'raw backslashes',
      (from: string, to: string, f: string) => `/v1/containers/${from}/files/..\\..\\${to}\\files\\${f}/content`,
    ],
    [
      'encoded backslashes',
      (from: string, to: string, f: string) => `/v1/containers/${from}/files/..%5c..%5c${to}%5cfiles%5c${f}/content`,
    ],
    [
      'double encoding',
      (from: string, to: string, f: string) =>
        `/v1/containers/${from}/files/%252e%252e%252f${to}%252ffiles%252f${f}/content`,
    ],
    ['NUL', (from: string, _to: string, f: string) => `/v1/containers/${from}/files/${f}%00/content`],
    [
      'an encoded slash in the container id',
      (from: string, to: string, f: string) => `/v1/containers/${from}%2f..%2f${to}/files/${f}/content`,
    ],
    [
      'overlong id',
      (from: string, _to: string, f: string) => `/v1/containers/${from}/files/${f}${'A'.repeat(4000)}/content`,
    ],
    ['malformed id', (from: string) => `/v1/containers/${from}/files/not-an-id/content`],
  ])('traversal through %s is 404', async (_label, build) => {
    const target = await newSession();
    const from = await newSession();
    const artifact = await containerUpload(target.container_id, 't.txt', 'traversal-secret');
    const res = await rawGet(build(from.container_id, target.container_id, artifact.id));
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body).error).toMatchObject(notFound);
    expect(res.body).not.toContain('traversal-secret');
  });

  it('asks for the key before saying anything is missing', async () => {
    for (const [method, path] of [
      ['GET', '/v1/containers/cntr_000000000000000000000000/files/file_000000000000000000000000/content'],
      ['DELETE', '/v1/containers/cntr_000000000000000000000000'],
      ['GET', '/v1/files'],
      ['POST', '/v1/no-such-route'],
    ]) {
      const res = await api(method, path, { who: 'anon' });
      expect(res.status).toBe(401);
      expect(res.json.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    }
    const wrong = await api('GET', '/v1/files', {
      who: 'anon',
      headers: { authorization: 'Bearer sk_test_alice_0123456789x' },
    });
    expect(wrong.status).toBe(401);
  });
});

describe('the public surface', () => {
  it('serves health, metrics, limits, OpenAPI and docs without a key', async () => {
    for (const path of [
      '/healthz',
      '/readyz',
      '/metrics',
      '/v1/limits',
      '/openapi.json',
      '/docs',
      '/docs/assets/swagger-ui-bundle.js',
    ]) {
      expect((await api('GET', path, { who: 'anon' })).status, path).toBe(200);
    }
    const limits = await api('GET', '/v1/limits', { who: 'anon' });
    expect(limits.json).toMatchObject({
      object: 'limits',
      max_file_bytes: 4 * 1024 * 1024,
      max_inline_file_bytes: 1024 * 1024,
      preview: { enabled: true, timeout_ms: 60_000 },
      archive: { formats: ['zip'] },
    });
    // The worker's converters are installed in tests: every family previews.
    expect(limits.json.preview.formats).toEqual(
      expect.arrayContaining(['docx', 'xlsx', 'pptx', 'csv', 'html', 'md', 'txt', 'png', 'jpeg', 'gif', 'webp', 'pdf']),
    );
    expect(limits.json.max_request_bytes).toBeGreaterThanOrEqual(4 * Math.ceil((1024 * 1024) / 3) + 65536);
    const openapi = await api('GET', '/openapi.json', { who: 'anon' });
    expect(openapi.json.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.json.paths)).toContain('/v1/containers/{container_id}/files/{file_id}/content');
    expect((await api('GET', '/metrics', { who: 'anon' })).body.toString()).toContain('uhp_http_requests_total');
  });

  it('echoes a sane X-Request-Id and replaces an insane one', async () => {
    const sane = await api('GET', '/v1/limits', { headers: { 'x-request-id': 'abc.DEF_1:2-3' } });
    expect(sane.headers.get('x-request-id')).toBe('abc.DEF_1:2-3');
    const insane = await api('GET', '/v1/limits', { headers: { 'x-request-id': 'no spaces allowed' } });
    expect(insane.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const notFound = await api('GET', '/v1/nope');
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('x-request-id')).toBeTruthy();
    expect(notFound.json.error).toMatchObject({ type: 'not_found_error', code: 'not_found', param: null });
  });
});
