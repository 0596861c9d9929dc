import { describe, expect, it, vi } from 'vitest';
import type { ObjectStager } from '@app/lifecycle';
import { objectPart, uploadRow } from '../../../../../../test/fakes/upload-rows';
import { ComposedCompletion } from './composed.completion';

const composed = { id: 'object_c', principalId: 'alice', storageKey: 'objects/c', bytes: 25, sha256: 's', md5: 'm' };

function strategy() {
  const stager = { stageComposed: vi.fn().mockResolvedValue(composed), discard: vi.fn().mockResolvedValue(undefined) };
  return { stager, completion: new ComposedCompletion(stager as unknown as ObjectStager) };
}

describe('ComposedCompletion', () => {
  it('composes the named byte ranges on the storage side, adjacent ranges of one object merged', async () => {
    const { stager, completion } = strategy();
    const parts = [objectPart('p1', 'staged', 10, 10), objectPart('p2', 'staged', 5, 20), objectPart('p3', 'own', 10)];
    const upload = uploadRow({ bytes: 25n, mimeType: 'text/csv' });
    const made = await completion.complete({ principalId: 'alice', upload, parts, md5: null });
    expect(stager.stageComposed).toHaveBeenCalledWith(
      'alice',
      [
        { key: 'objects/staged', start: 10, end: 24 },
        { key: 'objects/own', start: 0, end: 9 },
      ],
      'text/csv',
    );
    expect(made).toEqual({ object: composed, how: 'composed', kept: 'staged' });
  });

  it('checks the md5, and discards the composed object when it does not match', async () => {
    const { stager, completion } = strategy();
    const request = { principalId: 'alice', upload: uploadRow({ bytes: 10n }), parts: [objectPart('p1', 'o', 10)] };
    expect(await completion.complete({ ...request, md5: 'm' })).toMatchObject({ how: 'composed' });
    expect(stager.discard).not.toHaveBeenCalled();
    await expect(completion.complete({ ...request, md5: 'x' })).rejects.toMatchObject({ param: 'md5' });
    expect(stager.discard).toHaveBeenCalledWith([composed]);
  });
});
