import { describe, expect, it, vi } from 'vitest';
import type { ObjectStore } from '@app/common';
import type { StoredObjectRepository, StoredObjectRow } from '@app/db';
import { objectPart, uploadRow } from '../../../../../../test/fakes/upload-rows';
import { WholeObjectCompletion } from './whole-object.completion';

const stored = (id: string, bytes: number, sha256: string | null): StoredObjectRow => ({
  id,
  principalId: 'alice',
  storageKey: `objects/${id}`,
  status: 'READY',
  refCount: 1,
  bytes: BigInt(bytes),
  sha256,
});

function strategy(objects: StoredObjectRow[]) {
  const find = vi.fn(async (id: string) => objects.find((object) => object.id === id) ?? null);
  const hash = vi.fn(async () => ({ bytes: 30, sha256: 'measured-sha256', md5: 'measured-md5' }));
  const completion = new WholeObjectCompletion(
    { find } as unknown as StoredObjectRepository,
    { hash } as unknown as ObjectStore,
  );
  return { find, hash, completion };
}

describe('WholeObjectCompletion', () => {
  it('points the file at the one object the parts span, with the SHA-256 it already has', async () => {
    const { hash, completion } = strategy([stored('o1', 30, 'known-sha256')]);
    const parts = [objectPart('p1', 'o1', 10), objectPart('p2', 'o1', 20, 10)];
    const made = await completion.complete({
      principalId: 'alice',
      upload: uploadRow({ bytes: 30n }),
      parts,
      md5: null,
    });
    expect(made).toEqual({
      how: 'whole',
      kept: 'retained',
      object: {
        id: 'o1',
        principalId: 'alice',
        storageKey: 'objects/o1',
        bytes: 30,
        sha256: 'known-sha256',
        md5: undefined,
      },
    });
    expect(hash).not.toHaveBeenCalled();
  });

  it('measures the object when its SHA-256 is unknown or an md5 is to be checked, and refuses a wrong md5', async () => {
    const { hash, completion } = strategy([stored('o1', 30, null)]);
    const request = { principalId: 'alice', upload: uploadRow({ bytes: 30n }), parts: [objectPart('p1', 'o1', 30)] };
    expect(await completion.complete({ ...request, md5: null })).toMatchObject({
      object: { sha256: 'measured-sha256' },
    });
    expect(hash).toHaveBeenLastCalledWith('objects/o1', { md5: false });
    expect(await completion.complete({ ...request, md5: 'measured-md5' })).toMatchObject({
      object: { md5: 'measured-md5' },
    });
    expect(hash).toHaveBeenLastCalledWith('objects/o1', { md5: true });
    await expect(completion.complete({ ...request, md5: 'other-md5' })).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'md5',
    });
  });

  it('does not apply to parts of several objects, part of an object, or a block', async () => {
    const { completion } = strategy([stored('o1', 30, 'a'), stored('o2', 10, 'b')]);
    const upload = uploadRow({ bytes: 20n });
    const request = { principalId: 'alice', upload, md5: null };
    expect(
      await completion.complete({ ...request, parts: [objectPart('p1', 'o1', 10), objectPart('p2', 'o2', 10)] }),
    ).toBeNull();
    expect(await completion.complete({ ...request, parts: [objectPart('p1', 'o1', 20)] })).toBeNull();
    expect(await completion.complete({ ...request, parts: [objectPart('p1', 'o1', 20, 10)] })).toBeNull();
    expect(await completion.complete({ ...request, parts: [] })).toBeNull();
  });
});
