import { describe, expect, it } from 'vitest';
import { manifestOf } from './archive-manifest';

const item = (id: string, filename = `${id}.txt`, bytes = 10, sha256 = 'a'.repeat(64)) => ({
  id,
  filename,
  bytes,
  sha256,
});

describe('manifestOf', () => {
  it('is the same for the same artifacts in the same order, with totals', () => {
    const a = manifestOf([item('file_1'), item('file_2', 'b.txt', 5)]);
    const b = manifestOf([item('file_1'), item('file_2', 'b.txt', 5n as unknown as number)]);
    expect(a).toEqual(b);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.filesTotal).toBe(2);
    expect(a.bytesTotal).toBe(15n);
  });

  it('changes when an artifact is added, removed, renamed, resized, rewritten or reordered', () => {
    const base = manifestOf([item('file_1'), item('file_2')]).hash;
    expect(manifestOf([item('file_1'), item('file_2'), item('file_3')]).hash).not.toBe(base);
    expect(manifestOf([item('file_1')]).hash).not.toBe(base);
    expect(manifestOf([item('file_1'), item('file_2', 'other.txt')]).hash).not.toBe(base);
    expect(manifestOf([item('file_1'), item('file_2', 'file_2.txt', 11)]).hash).not.toBe(base);
    expect(manifestOf([item('file_1'), item('file_2', 'file_2.txt', 10, 'b'.repeat(64))]).hash).not.toBe(base);
    expect(manifestOf([item('file_2'), item('file_1')]).hash).not.toBe(base);
  });

  it('cannot be forged by a filename that holds the separators', () => {
    const split = manifestOf([item('file_1', 'a'), item('file_2', 'b')]).hash;
    const joined = manifestOf([item('file_1', `a","${'a'.repeat(64)}","10"]\n["file_2","b`)]).hash;
    expect(joined).not.toBe(split);
  });

  it('of an empty session is a fixed hash with zero totals', () => {
    expect(manifestOf([])).toEqual({
      hash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      filesTotal: 0,
      bytesTotal: 0n,
    });
  });
});
