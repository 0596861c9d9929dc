import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, fileForm, upload } from '../support/api';
import { count, db, dbNow, leftoversSince } from '../support/db';
import { deleteObject, objectExists } from '../support/s3';
import { pollUntil } from '../support/poll';
import { e2eStack, metricsPerProcess } from '../support/replicas';

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

describe('files: upload, read, list, download, delete', () => {
  it('uploads a file and answers the OpenAI file object with sha256', async () => {
    const data = randomBytes(200_000);
    const file = await upload('q3 report.pdf', data, { type: 'application/pdf' });
    expect(file).toMatchObject({
      object: 'file',
      filename: 'q3 report.pdf',
      bytes: 200_000,
      purpose: 'user_data',
      content_type: 'application/pdf',
      sha256: sha(data),
      expires_at: null,
      status: 'processed',
    });
    expect(file.id).toMatch(/^file_[0-9A-Za-z]{24}$/);
    expect(Math.abs(file.created_at - Date.now() / 1000)).toBeLessThan(60);
    const again = await api('GET', `/v1/files/${file.id}`);
    expect(again.json).toEqual(file);
  });

  it('downloads exactly the bytes with the contract headers', async () => {
    const data = randomBytes(70_000);
    const file = await upload('résumé final.bin', data);
    const res = await api('GET', `/v1/files/${file.id}/content`, { headers: { accept: 'application/binary' } });
    expect(res.status).toBe(200);
    expect(res.body.equals(data)).toBe(true);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-length')).toBe('70000');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(res.headers.get('cache-control')).toBe('private');
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('etag')).toBe(`"${sha(data)}"`);
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="r_sum_ final.bin"; filename*=UTF-8''r%C3%A9sum%C3%A9%20final.bin`,
    );
  });

  it('serves byte ranges, 416 outside the file, and 304 for a matching ETag', async () => {
    const data = randomBytes(1000);
    const file = await upload('range.bin', data);
    const path = `/v1/files/${file.id}/content`;
    const part = await api('GET', path, { headers: { range: 'bytes=100-199' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 100-199/1000');
    expect(part.body.equals(data.subarray(100, 200))).toBe(true);
    const suffix = await api('GET', path, { headers: { range: 'bytes=-10' } });
    expect(suffix.status).toBe(206);
    expect(suffix.body.equals(data.subarray(990))).toBe(true);
    const outside = await api('GET', path, { headers: { range: 'bytes=5000-6000' } });
    expect(outside.status).toBe(416);
    expect(outside.json.error).toMatchObject({ code: 'range_not_satisfiable', type: 'invalid_request_error' });
    expect(outside.headers.get('content-range')).toBe('bytes */1000');
    const etag = part.headers.get('etag')!;
    const cached = await api('GET', path, { headers: { 'if-none-match': etag } });
    expect(cached.status).toBe(304);
    expect(cached.body.length).toBe(0);
  });

  it('serves downloads straight from S3, many at once: the storage service signs each read and relays no byte', async () => {
    // Over every storage process: behind a load balancer, the reads go to any of them.
    const reads = async () => {
      const texts = await metricsPerProcess(e2eStack(), 'storage');
      const count = (way: string) =>
        texts.reduce(
          (sum, text) =>
            sum +
            Number(new RegExp(`^uhp_storage_reads_total\\{[^}]*way="${way}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0),
          0,
        );
      return { relayed: count('relayed'), signed: count('signed_url') };
    };
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const file = await upload('direct.bin', data);
    const path = `/v1/files/${file.id}/content`;
    const before = await reads();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api('GET', path, i % 2 ? { headers: { range: `bytes=${i * 1000}-${i * 200_000 + 1999}` } } : {}),
      ),
    );
    for (const [i, answer] of answers.entries()) {
      expect(answer.status).toBe(i % 2 ? 206 : 200);
      const expected = i % 2 ? data.subarray(i * 1000, i * 200_000 + 2000) : data;
      expect(sha(answer.body)).toBe(sha(expected));
    }
    expect(await reads()).toEqual({ relayed: before.relayed, signed: before.signed + 12 });
  });

  it('round-trips an empty file', async () => {
    const file = await upload('empty.txt', '', { type: 'text/plain' });
    expect(file.bytes).toBe(0);
    const res = await api('GET', `/v1/files/${file.id}/content`);
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(0);
  });

  it('takes the content type from the extension when the part says octet-stream', async () => {
    expect((await upload('pic.png', randomBytes(10))).content_type).toBe('image/png');
    expect((await upload('odd.zzqqx', randomBytes(10))).content_type).toBe('application/octet-stream');
    expect((await upload('page.html', '<p>x</p>', { type: 'text/html' })).content_type).toBe('text/html');
  });

  it('keeps purpose and expires_after sent after the file part', async () => {
    const file = await upload('batch.jsonl', '{}\n', {
      fields: {
        purpose: 'fine-tune',
        'expires_after[anchor]': 'created_at',
        'expires_after[seconds]': '86400',
        x_ignored: 'y',
      },
    });
    expect(file.purpose).toBe('fine-tune');
    expect(file.expires_at).toBe(file.created_at + 86_400);
    const listed = await api('GET', '/v1/files?purpose=fine-tune&limit=1000');
    expect(listed.json.data.map((f: { id: string }) => f.id)).toContain(file.id);
  });

  it('pages the list newest first and oldest first', async () => {
    const purpose = 'evals';
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await upload(`page-${i}.txt`, `p${i}`, { fields: { purpose } }));
    const desc = await api('GET', `/v1/files?purpose=${purpose}&limit=2`);
    expect(desc.json).toMatchObject({ object: 'list', has_more: true });
    expect(desc.json.data[0].id).toBe(made[2].id);
    expect(desc.json.first_id).toBe(made[2].id);
    expect(desc.json.last_id).toBe(desc.json.data[1].id);
    const next = await api('GET', `/v1/files?purpose=${purpose}&limit=1000&after=${made[1].id}`);
    expect(next.json.data.map((f: { id: string }) => f.id)).toContain(made[0].id);
    expect(next.json.data.map((f: { id: string }) => f.id)).not.toContain(made[1].id);
    const asc = await api('GET', `/v1/files?purpose=${purpose}&order=asc&limit=1000`);
    const ids = asc.json.data.map((f: { id: string }) => f.id);
    expect(ids.indexOf(made[0].id)).toBeLessThan(ids.indexOf(made[2].id));
    expect((await api('GET', '/v1/files?limit=0')).json.error.param).toBe('limit');
  });

  it('a listed file whose bytes are gone from the bucket is a 500 that says so, not a 404, for every reader at once', async () => {
    const file = await upload('lost.txt', `lost ${randomBytes(6).toString('hex')}`);
    const { rows } = await db.query(
      'SELECT o.storage_key FROM files f JOIN stored_objects o ON o.id = f.object_id WHERE f.id = $1',
      [file.id],
    );
    await deleteObject(rows[0].storage_key);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        api('GET', `/v1/files/${file.id}/content`, i % 2 ? { headers: { range: 'bytes=0-3' } } : {}),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(500);
      expect(answer.json.error).toMatchObject({ type: 'server_error', code: 'internal_error' });
      expect(answer.json.error.message).toMatch(/missing from storage/);
      expect(answer.headers.get('x-should-retry')).toBe('false');
      expect([answer.headers.get('etag'), answer.headers.get('content-range')]).toEqual([null, null]);
    }
    expect((await api('GET', `/v1/files/${file.id}`)).status).toBe(200);
    // The answers changed nothing: the object keeps its one reference, and nothing was written in its place.
    const object = await db.query('SELECT ref_count FROM stored_objects WHERE storage_key = $1', [rows[0].storage_key]);
    expect(object.rows).toEqual([{ ref_count: 1 }]);
    expect(await objectExists(rows[0].storage_key)).toBe(false);
  });

  it('deletes: 404 at once, gone from the list, bytes purged from the bucket', async () => {
    const file = await upload('gone.txt', 'bye');
    const { rows } = await db.query(
      'SELECT o.storage_key FROM files f JOIN stored_objects o ON o.id = f.object_id WHERE f.id = $1',
      [file.id],
    );
    const key = rows[0].storage_key as string;
    expect(await objectExists(key)).toBe(true);
    const deleted = await api('DELETE', `/v1/files/${file.id}`);
    expect(deleted.json).toEqual({ id: file.id, object: 'file', deleted: true });
    expect((await api('GET', `/v1/files/${file.id}`)).status).toBe(404);
    expect((await api('GET', `/v1/files/${file.id}/content`)).status).toBe(404);
    expect((await api('DELETE', `/v1/files/${file.id}`)).status).toBe(404);
    await pollUntil(async () => !(await objectExists(key)), 'purged object gone from the bucket', 30_000);
    await pollUntil(
      async () =>
        (await count(`SELECT count(*) FROM stored_objects WHERE storage_key = $1 AND status <> 'PURGED'`, [key])) === 0,
      'its row purged',
      10_000,
    );
  });

  it('expires a file in the background', async () => {
    const file = await upload('short-lived.txt', 'soon', {
      fields: { 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': '3600' },
    });
    await db.query(`UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1`, [file.id]);
    expect((await api('GET', `/v1/files/${file.id}`)).status).toBe(404);
    await pollUntil(
      async () => (await count('SELECT count(*) FROM files WHERE id = $1 AND deleted_at IS NOT NULL', [file.id])) === 1,
      'sweep marks the expired file deleted',
      30_000,
    );
  });

  it('rejects a bad purpose and a bad expiry with their param and keeps nothing', async () => {
    const since = await dbNow();
    const bad = await api('POST', '/v1/files', {
      form: fileForm('bad-purpose.txt', 'x', 'text/plain', { purpose: 'bogus' }),
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'invalid_request', param: 'purpose' });
    const early = await api('POST', '/v1/files', {
      form: fileForm('bad-first.txt', 'x', 'text/plain', { purpose: 'bogus' }, true),
    });
    expect(early.json.error.param).toBe('purpose');
    const expiry = await api('POST', '/v1/files', {
      form: fileForm('bad-exp.txt', 'x', 'text/plain', {
        'expires_after[anchor]': 'created_at',
        'expires_after[seconds]': '3599',
      }),
    });
    expect(expiry.json.error.param).toBe('expires_after');
    const half = await api('POST', '/v1/files', {
      form: fileForm('half-exp.txt', 'x', 'text/plain', { 'expires_after[seconds]': '4000' }),
    });
    expect(half.json.error.param).toBe('expires_after');
    expect(await leftoversSince(since)).toEqual({ objects: 0, files: 0, containerFiles: 0 });
  });
});
