import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, containerUpload, newSession, upload } from '../support/api';
import { count, db } from '../support/db';
import { E2E_BASE_URL } from '../support/env';

describe('sessions, containers and container files', () => {
  it('creates a session with its current container', async () => {
    await newSession(); // an older one of its own, so the listing of one has more after it on an empty database
    const res = await api('POST', '/v1/sessions', { json: { metadata: { project: 'q3' } } });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'session', metadata: { project: 'q3' } });
    expect(res.json.id).toMatch(/^sess_[0-9A-Za-z]{24}$/);
    expect(res.json.container_id).toMatch(/^cntr_[0-9A-Za-z]{24}$/);
    expect((await api('GET', `/v1/sessions/${res.json.id}`)).json).toEqual(res.json);
    const container = await api('GET', `/v1/containers/${res.json.container_id}`);
    expect(container.json).toMatchObject({
      id: res.json.container_id,
      object: 'container',
      session_id: res.json.id,
      name: null,
      status: 'running',
    });
    const sessions = await api('GET', '/v1/sessions?limit=1');
    expect(sessions.json).toMatchObject({ object: 'list', has_more: true });
    expect(sessions.json.data[0].id).toBe(res.json.id);
  });

  it('rejects bad metadata and an unknown body type', async () => {
    expect((await api('POST', '/v1/sessions', { json: { metadata: { n: 1 } } })).json.error.param).toBe('metadata');
    expect((await api('POST', '/v1/sessions', { json: [] })).status).toBe(400);
    const text = await api('POST', '/v1/sessions', { headers: { 'content-type': 'text/plain' }, json: undefined });
    expect(text.status).toBe(200);
    const broken = await fetch(`${E2E_BASE_URL}/v1/sessions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_alice_0123456789', 'content-type': 'application/json' },
      body: '{"metadata": {',
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
  });

  // Found by the fuzzer: half a UTF-16 pair reached Postgres, which refused it, and the answer was a 500.
  it('answers 400 to a lone surrogate or a NUL in metadata or a container name', async () => {
    const inMetadata = await api('POST', '/v1/sessions', { json: { metadata: { note: '\udfff' } } });
    expect([inMetadata.status, inMetadata.json.error.code]).toEqual([400, 'invalid_json']);
    const inKey = await api('POST', '/v1/sessions', { json: { metadata: { '\ud800': 'v' } } });
    expect([inKey.status, inKey.json.error.code]).toEqual([400, 'invalid_json']);
    const inName = await api('POST', '/v1/containers', { json: { name: '\udfff', file_ids: [] } });
    expect([inName.status, inName.json.error.code]).toEqual([400, 'invalid_json']);
    // And U+0000, which Postgres does not store in text: refused at the edge rather than failing in the insert.
    const nul = await api('POST', '/v1/sessions', { json: { metadata: { note: 'a\u0000b' } } });
    expect([nul.status, nul.json.error.code, nul.json.error.param]).toEqual([400, 'invalid_request', 'metadata']);
    const nulName = await api('POST', '/v1/containers', { json: { name: 'a\u0000b' } });
    expect([nulName.status, nulName.json.error.param]).toEqual([400, 'name']);
  });

  it('uploads into a container and copies an uploaded file in without a second copy of the bytes', async () => {
    const session = await newSession();
    const data = randomBytes(5000);
    const artifact = await containerUpload(session.container_id, 'chart.png', data, { type: 'image/png' });
    expect(artifact).toMatchObject({
      object: 'container.file',
      container_id: session.container_id,
      session_id: session.id,
      filename: 'chart.png',
      path: '/mnt/data/chart.png',
      bytes: 5000,
      content_type: 'image/png',
      source: 'user',
      response_id: null,
    });
    const file = await upload('input.csv', 'a,b\n1,2\n', { type: 'text/csv' });
    const copy = await api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: file.id } });
    expect(copy.status).toBe(200);
    expect(copy.json.id).not.toBe(file.id);
    expect(copy.json).toMatchObject({ filename: 'input.csv', bytes: 8, source: 'user' });
    const { rows } = await db.query(
      `SELECT o.ref_count FROM container_files c JOIN stored_objects o ON o.id = c.object_id WHERE c.id = $1`,
      [copy.json.id],
    );
    expect(rows[0].ref_count).toBe(2);
    expect(
      await count(
        `SELECT count(DISTINCT object_id) FROM (SELECT object_id FROM files WHERE id = $1 UNION ALL SELECT object_id FROM container_files WHERE id = $2) x`,
        [file.id, copy.json.id],
      ),
    ).toBe(1);
    // Deleting the original keeps the copy readable: the object still has a reference.
    await api('DELETE', `/v1/files/${file.id}`);
    const content = await api('GET', `/v1/containers/${session.container_id}/files/${copy.json.id}/content`);
    expect(content.body.toString()).toBe('a,b\n1,2\n');
    expect(
      (await api('POST', `/v1/containers/${session.container_id}/files`, { json: { file_id: file.id } })).json.error,
    ).toMatchObject({ code: 'not_found', param: 'file_id' });
    const listed = await api('GET', `/v1/containers/${session.container_id}/files?order=asc`);
    expect(listed.json.data.map((f: { id: string }) => f.id)).toEqual([artifact.id, copy.json.id]);
    const deleted = await api('DELETE', `/v1/containers/${session.container_id}/files/${artifact.id}`);
    expect(deleted.json).toEqual({ id: artifact.id, object: 'container.file.deleted', deleted: true });
    expect((await api('GET', `/v1/containers/${session.container_id}/files/${artifact.id}`)).status).toBe(404);
  });

  it('POST /v1/containers opens a new session with the named files copied in', async () => {
    const file = await upload('seed.txt', 'seed');
    const res = await api('POST', '/v1/containers', {
      json: { name: 'analysis', file_ids: [file.id], expires_after: { anchor: 'last_active_at', minutes: 20 } },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'container', name: 'analysis', status: 'running' });
    const session = await api('GET', `/v1/sessions/${res.json.session_id}`);
    expect(session.json.container_id).toBe(res.json.id);
    const files = await api('GET', `/v1/containers/${res.json.id}/files`);
    expect(files.json.data.map((f: { filename: string }) => f.filename)).toEqual(['seed.txt']);
    const missing = await api('POST', '/v1/containers', { json: { file_ids: ['file_000000000000000000000000'] } });
    expect(missing.json.error).toMatchObject({ code: 'not_found', param: 'file_ids[0]' });
  });

  it('deleting the current container gives the session a fresh empty one', async () => {
    const session = await newSession();
    const artifact = await containerUpload(session.container_id, 'old.txt', 'old');
    const res = await api('DELETE', `/v1/containers/${session.container_id}`);
    expect(res.json).toEqual({ id: session.container_id, object: 'container.deleted', deleted: true });
    expect((await api('GET', `/v1/containers/${session.container_id}`)).status).toBe(404);
    expect((await api('GET', `/v1/containers/${session.container_id}/files/${artifact.id}/content`)).status).toBe(404);
    const after = await api('GET', `/v1/sessions/${session.id}`);
    expect(after.json.container_id).toMatch(/^cntr_/);
    expect(after.json.container_id).not.toBe(session.container_id);
    expect((await api('GET', `/v1/containers/${after.json.container_id}/files`)).json.data).toEqual([]);
    const listing = await api('GET', `/v1/sessions/${session.id}/files`);
    expect(listing.json.files).toEqual([]);
  });

  it('lists every artifact of a session across containers, oldest first, streamed and paged', async () => {
    const session = await newSession();
    const first = await containerUpload(session.container_id, 'a.txt', 'a');
    const second = await containerUpload(session.container_id, 'b.txt', 'b');
    const other = await api('POST', '/v1/containers', { json: {} }); // another session: must not appear
    await containerUpload(other.json.id, 'elsewhere.txt', 'x');
    const all = await api('GET', `/v1/sessions/${session.id}/files`);
    expect(all.json.has_more).toBe(false);
    expect(all.json.files.map((f: { id: string }) => f.id)).toEqual([first.id, second.id]);
    expect(all.json.files[0]).toMatchObject({ container_id: session.container_id, filename: 'a.txt', bytes: 1 });
    const page = await api('GET', `/v1/sessions/${session.id}/files?limit=1`);
    expect(page.json).toMatchObject({ has_more: true });
    expect(page.json.files.map((f: { id: string }) => f.id)).toEqual([first.id]);
    const rest = await api('GET', `/v1/sessions/${session.id}/files?limit=1&after=${first.id}`);
    expect(rest.json.files.map((f: { id: string }) => f.id)).toEqual([second.id]);
    expect(rest.json.has_more).toBe(false);
  });

  it('streams a listing larger than one database batch in order', async () => {
    const session = await newSession();
    const file = await upload('many.txt', 'm');
    // 1,100 artifacts sharing one object: more than two batches of the keyset stream.
    await db.query(
      `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes, content_type, sha256, source)
       SELECT 'file_' || lpad(to_hex(g), 8, '0') || substr(md5(random()::text), 1, 16), f.principal_id, $1, $2, f.object_id, 'n' || g || '.txt', 1, 'text/plain', f.sha256, 'user'
         FROM files f, generate_series(1, 1100) g WHERE f.id = $3 ORDER BY g`,
      [session.id, session.container_id, file.id],
    );
    const res = await api('GET', `/v1/sessions/${session.id}/files`);
    expect(res.json.files).toHaveLength(1100);
    expect(res.json.files[0].filename).toBe('n1.txt');
    expect(res.json.files[1099].filename).toBe('n1100.txt');
    expect(res.headers.get('content-length')).toBeNull();
  });

  it('deleting a session makes its session, containers and artifacts 404 together', async () => {
    const session = await newSession();
    const artifact = await containerUpload(session.container_id, 'doomed.txt', 'doomed');
    const res = await api('DELETE', `/v1/sessions/${session.id}`);
    expect(res.json).toEqual({ id: session.id, object: 'session.deleted', deleted: true });
    for (const path of [
      `/v1/sessions/${session.id}`,
      `/v1/sessions/${session.id}/files`,
      `/v1/containers/${session.container_id}`,
      `/v1/containers/${session.container_id}/files/${artifact.id}/content`,
    ]) {
      expect((await api('GET', path)).status, path).toBe(404);
    }
  });
});
