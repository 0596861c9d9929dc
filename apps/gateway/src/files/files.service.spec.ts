import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fileUpload, gatewayServices, multipartBody, readDownload } from '../../../../test/fakes/gateway';
import { runPurges } from '../../../../test/fakes/platform';

const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** Nothing of a rejected upload may remain: no bytes, no object row, no file row. */
function expectNothingKept(world: ReturnType<typeof gatewayServices>) {
  expect(world.platform.store.objects.size).toBe(0);
  expect(world.platform.memory.tables.objects.size).toBe(0);
  expect(world.platform.memory.tables.files).toEqual([]);
}

describe('FilesService', () => {
  it('keeps an upload as a file with the bytes, size and SHA-256 the store measured', async () => {
    const world = gatewayServices();
    const file = await world.files.upload(
      ALICE,
      fileUpload('notes.txt', 'hello, files', {
        purpose: 'assistants',
        'expires_after[anchor]': 'created_at',
        'expires_after[seconds]': '3600',
      }),
    );
    expect(file).toMatchObject({
      filename: 'notes.txt',
      bytes: 12n,
      sha256: sha256('hello, files'),
      purpose: 'assistants',
      contentType: 'text/plain',
    });
    expect(file.expiresAt!.getTime() - file.createdAt.getTime()).toBe(3_600_000);
    expect((await readDownload(await world.files.download(ALICE, file.id))).toString()).toBe('hello, files');
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it.each([
    [
      'a purpose it does not know',
      fileUpload('a.txt', 'x', { purpose: 'bogus' }),
      { code: 'invalid_request', param: 'purpose' },
    ],
    [
      'half of expires_after',
      fileUpload('a.txt', 'x', { 'expires_after[seconds]': '3600' }),
      { code: 'invalid_request', param: 'expires_after' },
    ],
    ['a file over max_file_bytes', fileUpload('big.bin', Buffer.alloc(1_048_577)), { code: 'file_too_large' }],
    ['no file part', multipartBody([{ name: 'purpose', value: 'user_data' }]), { code: 'missing_file' }],
    [
      'two file parts',
      multipartBody([
        { name: 'file', filename: 'a', data: 'a' },
        { name: 'file', filename: 'b', data: 'b' },
      ]),
      { code: 'invalid_multipart' },
    ],
    ['a filename of ..', fileUpload('..', 'x'), { code: 'invalid_filename' }],
  ])('refuses %s and keeps nothing', async (_case, body, error) => {
    const world = gatewayServices();
    await expect(world.files.upload(ALICE, body)).rejects.toMatchObject(error);
    expectNothingKept(world);
  });

  it('deletes a file once however many deletes race: one succeeds, the rest are 404, the bytes go', async () => {
    const world = gatewayServices();
    const file = await world.files.upload(ALICE, fileUpload('once.txt', 'once'));
    const results = await Promise.allSettled(Array.from({ length: 12 }, () => world.files.delete(ALICE, file.id)));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    for (const result of results.filter((result) => result.status === 'rejected'))
      expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'not_found' });
    await expect(world.files.get(ALICE, file.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await runPurges(world.platform)).toBe(1);
    expect(world.platform.store.objects.size).toBe(0);
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it('a listed file whose bytes left the store is a 500 without retry; one deleted while it was opened is the 404', async () => {
    const world = gatewayServices();
    const lost = await world.files.upload(ALICE, fileUpload('lost.txt', 'lost'));
    const going = await world.files.upload(ALICE, fileUpload('going.txt', 'going'));
    world.platform.store.objects.clear();

    await expect(readDownload(await world.files.download(ALICE, lost.id))).rejects.toMatchObject({
      code: 'internal_error',
      headers: { 'x-should-retry': 'false' },
      message: expect.stringContaining('missing from storage'),
    });
    const download = await world.files.download(ALICE, going.id);
    await world.files.delete(ALICE, going.id);
    await expect(readDownload(download)).rejects.toMatchObject({ code: 'not_found' });
  });

  it("never shows or deletes another principal's file: the same 404 as a missing one", async () => {
    const world = gatewayServices();
    const file = await world.files.upload(ALICE, fileUpload('mine.txt', 'mine'));
    await expect(world.files.get(BOB, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.files.download(BOB, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.files.delete(BOB, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.files.get(ALICE, 'file_../../etc/passwd')).rejects.toMatchObject({ code: 'not_found' });
    expect((await world.files.list(BOB, { limit: 10, order: 'desc' })).items).toEqual([]);
    expect((await world.files.get(ALICE, file.id)).id).toBe(file.id);
  });

  it('lists newest first, pages after a cursor, and filters by purpose', async () => {
    const world = gatewayServices();
    const ids = [];
    for (const purpose of ['user_data', 'vision', 'user_data'])
      ids.push((await world.files.upload(ALICE, fileUpload(`${purpose}.txt`, purpose, { purpose }))).id);
    const first = await world.files.list(ALICE, { limit: 2, order: 'desc' });
    expect(first.items.map((file) => file.id)).toEqual([ids[2], ids[1]]);
    expect(first.hasMore).toBe(true);
    const rest = await world.files.list(ALICE, { limit: 2, order: 'desc', after: ids[1] });
    expect(rest).toMatchObject({ items: [{ id: ids[0] }], hasMore: false });
    expect(
      (await world.files.list(ALICE, { limit: 10, order: 'asc', purpose: 'user_data' })).items.map((file) => file.id),
    ).toEqual([ids[0], ids[2]]);
    await expect(world.files.list(ALICE, { limit: 10, order: 'asc', after: 'file_nope' })).rejects.toMatchObject({
      param: 'after',
    });
  });
});
