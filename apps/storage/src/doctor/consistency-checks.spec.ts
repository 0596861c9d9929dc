import { describe, expect, it } from 'vitest';
import type { ObjectRecord } from '@app/db';
import {
  abandonedUploads,
  BucketComparison,
  horizonsOf,
  orphanedRowFindings,
  referenceFindings,
  strayUploadParts,
  stuckRows,
} from './consistency-checks';

const NOW = new Date('2026-12-03T12:00:00Z');
const horizons = horizonsOf(NOW, { graceSeconds: 600, abandonedUploadSeconds: 3600, staleUploadSeconds: 86_400 });
const minutesAgo = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000);

const row = (key: string, overrides: Partial<ObjectRecord> = {}): ObjectRecord => ({
  id: `id-${key}`,
  storageKey: key,
  status: 'READY',
  bytes: 10n,
  createdAt: minutesAgo(60),
  updatedAt: minutesAgo(60),
  ...overrides,
});

describe('the bucket against the rows', () => {
  it('finds nothing when every READY row is listed with its size', () => {
    const comparison = new BucketComparison(horizons);
    comparison.addRows([row('a'), row('b', { status: 'PURGING' }), row('c', { status: 'UPLOADING' })]);
    comparison.addListing([{ key: 'a', size: 10, lastModified: minutesAgo(60) }]);
    comparison.addListing([{ key: 'b', size: 3, lastModified: minutesAgo(60) }]);
    expect(comparison.finish()).toEqual([]);
  });

  it('reports a READY row the listing lacks and one whose size differs', () => {
    const comparison = new BucketComparison(horizons);
    comparison.addRows([row('gone'), row('short')]);
    comparison.addListing([{ key: 'short', size: 9, lastModified: minutesAgo(60) }]);
    expect(comparison.finish()).toEqual([
      expect.objectContaining({ kind: 'size_mismatch', key: 'short', bytes: 10, actualBytes: 9, repairable: false }),
      expect.objectContaining({ kind: 'missing_object', key: 'gone', repairable: false }),
    ]);
  });

  it('reports bytes no row owns (or whose row is PURGED) only past the grace', () => {
    const comparison = new BucketComparison(horizons);
    comparison.addRows([row('purged', { status: 'PURGED' })]);
    comparison.addListing([
      { key: 'old', size: 1, lastModified: minutesAgo(11) },
      { key: 'young', size: 1, lastModified: minutesAgo(9) },
      { key: 'purged', size: 1, lastModified: minutesAgo(30) },
    ]);
    expect(comparison.finish()).toEqual([
      expect.objectContaining({ kind: 'orphan_object', key: 'old', row: 'none', repairable: true }),
      expect.objectContaining({ kind: 'orphan_object', key: 'purged', row: 'PURGED' }),
    ]);
  });
});

describe('unfinished multipart uploads', () => {
  it('reports those begun and last fed before the sweep horizon plus the grace', () => {
    const upload = (key: string, initiated: number, lastPart: number | null) => ({
      key,
      uploadId: `u-${key}`,
      initiated: minutesAgo(initiated),
      lastPartAt: lastPart === null ? null : minutesAgo(lastPart),
    });
    const found = abandonedUploads(
      [upload('idle', 80, 75), upload('empty', 80, null), upload('fed', 80, 5), upload('new', 30, null)],
      horizons,
    );
    expect(found.map((f) => f.kind === 'abandoned_upload' && f.key)).toEqual(['idle', 'empty']);
  });
});

describe('rows stuck in a passing state', () => {
  it('judges uploads by the stale-upload horizon and the rest by the grace', () => {
    const found = stuckRows(
      [
        { table: 'stored_objects', id: 'up-young', status: 'UPLOADING', since: minutesAgo(60) },
        { table: 'stored_objects', id: 'up-old', status: 'UPLOADING', since: minutesAgo(25 * 60) },
        { table: 'stored_objects', id: 'purging', status: 'PURGING', since: minutesAgo(11) },
        { table: 'previews', id: 'p-new', status: 'PENDING', since: minutesAgo(1) },
        { table: 'archives', id: 'a-old', status: 'building', since: minutesAgo(20) },
        { table: 'responses', id: 'r-due', status: 'in_progress', since: minutesAgo(5) },
        { table: 'responses', id: 'r-old', status: 'in_progress', since: minutesAgo(15) },
      ],
      horizons,
    );
    expect(found.map((f) => f.kind === 'stuck_row' && f.id)).toEqual(['up-old', 'purging', 'a-old', 'r-old']);
  });
});

describe('reference counts', () => {
  it('reports a count off the live rows, a READY object nothing holds, and live rows on a purged object', () => {
    const found = referenceFindings([
      { id: 'ok', status: 'READY', refCount: 2, live: 2 },
      { id: 'high', status: 'READY', refCount: 3, live: 1 },
      { id: 'low', status: 'READY', refCount: 1, live: 2 },
      { id: 'leak', status: 'READY', refCount: 0, live: 0 },
      { id: 'purged-but-used', status: 'PURGED', refCount: 0, live: 1 },
    ]);
    expect(found.map((f) => f.kind === 'reference_count' && [f.objectId, f.repairable])).toEqual([
      ['high', true],
      ['low', true],
      ['leak', true],
      ['purged-but-used', false],
    ]);
  });
});

describe('rows under deleted parents', () => {
  it('closes children of deleted parents, but leaves a session without a live current container to a person', () => {
    const found = orphanedRowFindings([
      { table: 'container_files', id: 'f', parent: 'c' },
      { table: 'sessions', id: 's', parent: 'c' },
    ]);
    expect(found.map((f) => f.repairable)).toEqual([true, false]);
  });
});

describe('parts of pending uploads that nothing accounts for', () => {
  const upload = { uploadId: 'upload_a', principalId: 'p', storageKey: 'uploads/a', s3UploadId: 's3-a' };
  const MiB = 1024 * 1024;

  it('reports the blocks no part or reservation accounts for, with their bytes, and nothing else', () => {
    const listed = [
      { partNumber: 1, bytes: 8 * MiB }, // block 0, a kept part
      { partNumber: 5, bytes: 16 * MiB }, // block 1, sub-parts of a block written before blocks were one part
      { partNumber: 6, bytes: 16 * MiB },
      { partNumber: 9, bytes: 6 * MiB }, // block 2, a part being written (reserved)
      { partNumber: 13, bytes: 0 },
      { partNumber: 9997, bytes: MiB }, // the copied last part of a completion that failed
    ];
    expect(strayUploadParts(upload, listed, new Set([0, 2]))).toEqual([
      {
        kind: 'stray_upload_parts',
        uploadId: 'upload_a',
        principalId: 'p',
        key: 'uploads/a',
        s3UploadId: 's3-a',
        blocks: [{ block: 1, bytes: 32 * MiB }],
        bytes: 32 * MiB,
        repairable: true,
      },
    ]);
    expect(strayUploadParts(upload, listed, new Set([0, 1, 2]))).toEqual([]);
  });
});
