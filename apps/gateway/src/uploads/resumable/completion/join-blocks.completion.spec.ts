import { describe, expect, it, vi } from 'vitest';
import { ApiError } from '@app/common';
import type { ObjectStager } from '@app/lifecycle';
import { blockPart, objectPart, uploadRow } from '../../../../../../test/fakes/upload-rows';
import { JoinBlocksCompletion, joinableAsBlocks } from './join-blocks.completion';

const MULTIPART = { storageKey: 'uploads/u1', s3UploadId: 's3-upload-1' };
const joined = { id: 'object_1', principalId: 'alice', storageKey: 'uploads/u1', bytes: 30, sha256: null };

function strategy(stageBlocks = vi.fn().mockResolvedValue({ ...joined, placements: [] })) {
  return { stageBlocks, completion: new JoinBlocksCompletion({ stageBlocks } as unknown as ObjectStager) };
}

describe('joinableAsBlocks', () => {
  it('takes blocks in ascending order, with at most a small whole object last', () => {
    expect(joinableAsBlocks([blockPart('p1', 1, 10), blockPart('p2', 3, 10)])).toBe(true);
    expect(joinableAsBlocks([blockPart('p1', 1, 10), objectPart('p2', 'o', 5)])).toBe(true);
    expect(joinableAsBlocks([blockPart('p1', 2, 10), blockPart('p2', 1, 10)])).toBe(false);
    expect(joinableAsBlocks([objectPart('p1', 'o', 5), blockPart('p2', 1, 10)])).toBe(false);
    expect(joinableAsBlocks([blockPart('p1', 1, 10), objectPart('p2', 'o', 5, 3)])).toBe(false);
    expect(joinableAsBlocks([objectPart('p1', 'o', 5)])).toBe(false);
  });
});

describe('JoinBlocksCompletion', () => {
  it('joins the named blocks and a small last part as they are, into the upload key, hash to come', async () => {
    const { stageBlocks, completion } = strategy();
    const parts = [blockPart('p1', 1, 10), blockPart('p2', 2, 10), objectPart('p3', 'tail', 10)];
    const made = await completion.complete({ principalId: 'alice', upload: uploadRow(MULTIPART), parts, md5: null });
    expect(stageBlocks).toHaveBeenCalledWith('alice', 'uploads/u1', 's3-upload-1', [1, 2], 'objects/tail');
    expect(made).toMatchObject({ how: 'blocks', kept: 'staged', object: { id: 'object_1', sha256: null } });
  });

  it('does not apply to an md5 to check, an upload without blocks, or parts out of order', async () => {
    const { stageBlocks, completion } = strategy();
    const inOrder = [blockPart('p1', 1, 10), blockPart('p2', 2, 10)];
    const request = { principalId: 'alice', upload: uploadRow(MULTIPART), parts: inOrder, md5: null };
    expect(await completion.complete({ ...request, md5: 'abc' })).toBeNull();
    expect(await completion.complete({ ...request, upload: uploadRow() })).toBeNull();
    expect(await completion.complete({ ...request, parts: [...inOrder].reverse() })).toBeNull();
    expect(await completion.complete({ ...request, parts: [] })).toBeNull();
    expect(stageBlocks).not.toHaveBeenCalled();
  });

  it('gives way when the multipart upload holds other parts too, and passes any other failure on', async () => {
    const parts = [blockPart('p1', 1, 10)];
    const request = { principalId: 'alice', upload: uploadRow(MULTIPART), parts, md5: null };
    const conflicted = strategy(vi.fn().mockRejectedValue(new ApiError('upload_conflict', 'other parts')));
    expect(await conflicted.completion.complete(request)).toBeNull();
    const down = strategy(vi.fn().mockRejectedValue(new ApiError('service_unavailable', 'storage down')));
    await expect(down.completion.complete(request)).rejects.toMatchObject({ code: 'service_unavailable' });
  });
});
