import { blockOfPartNumber, MAX_UPLOAD_BLOCKS } from '@app/contracts';
import type { ObjectRecord, OpenUploadMultipart, OrphanedRow, ReferenceRecord, UnsettledRow } from '@app/db';
import type { BucketObject, UnfinishedUpload } from './bucket-inventory.client';

/** One inconsistency: what is wrong, about what, and whether `--repair` may fix it without losing data. */
export type Finding =
  | {
      kind: 'missing_object';
      objectId: string;
      key: string;
      bytes: number;
      /** Only cached previews or archives hold it: dropping them is safe (the next request makes them again). */
      cachesOnly: boolean;
      repairable: boolean;
    }
  | { kind: 'size_mismatch'; objectId: string; key: string; bytes: number; actualBytes: number; repairable: false }
  | {
      kind: 'orphan_object';
      key: string;
      bytes: number;
      lastModified: string;
      row: 'none' | 'PURGED';
      repairable: true;
    }
  | { kind: 'abandoned_upload'; key: string; uploadId: string; initiated: string; repairable: true }
  | { kind: 'stuck_row'; table: UnsettledRow['table']; id: string; status: string; since: string; repairable: true }
  | {
      kind: 'reference_count';
      objectId: string;
      status: ReferenceRecord['status'];
      recorded: number;
      live: number;
      repairable: boolean;
    }
  | { kind: 'orphaned_row'; table: OrphanedRow['table']; id: string; parent: string; repairable: boolean }
  | {
      kind: 'stray_upload_parts';
      uploadId: string;
      principalId: string;
      key: string;
      s3UploadId: string;
      blocks: { block: number; bytes: number }[];
      bytes: number;
      repairable: true;
    };

export type FindingKind = Finding['kind'];

/**
 * The moments before which a passing state is a finding. Each is the horizon of the service that would
 * settle it, plus the operator's grace: what is younger may still be settling by itself.
 */
export interface Horizons {
  /** A bucket object with no row, older than this, belongs to nobody. */
  orphanBefore: Date;
  /** An unfinished multipart upload started and last fed before this was abandoned (the storage sweep's horizon). */
  multipartBefore: Date;
  /** An UPLOADING row created before this was left by a crash (the worker sweep's STALE_UPLOAD_SECONDS). */
  uploadingBefore: Date;
  /** A PURGING object, pending preview or pending/building archive untouched since before this is stuck. */
  settleBefore: Date;
  /** A response still in progress whose deadline is before this lost its gateway. */
  responseBefore: Date;
}

export function horizonsOf(
  now: Date,
  settings: { graceSeconds: number; abandonedUploadSeconds: number; staleUploadSeconds: number },
): Horizons {
  const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000);
  return {
    orphanBefore: ago(settings.graceSeconds),
    multipartBefore: ago(settings.abandonedUploadSeconds + settings.graceSeconds),
    uploadingBefore: ago(settings.staleUploadSeconds + settings.graceSeconds),
    settleBefore: ago(settings.graceSeconds),
    responseBefore: ago(settings.graceSeconds),
  };
}

/**
 * The bucket against the rows: fed the rows first, then the listing a page at a time. Every READY row
 * must be listed with its recorded size; every listed key must have a row that still wants its bytes.
 */
export class BucketComparison {
  private readonly byKey = new Map<string, ObjectRecord>();
  private readonly listed = new Set<string>();
  readonly findings: Finding[] = [];

  constructor(private readonly horizons: Horizons) {}

  addRows(rows: ObjectRecord[]): void {
    for (const row of rows) this.byKey.set(row.storageKey, row);
  }

  addListing(page: BucketObject[]): void {
    for (const object of page) {
      this.listed.add(object.key);
      const row = this.byKey.get(object.key);
      if (!row || row.status === 'PURGED') {
        if (object.lastModified < this.horizons.orphanBefore)
          this.findings.push({
            kind: 'orphan_object',
            key: object.key,
            bytes: object.size,
            lastModified: object.lastModified.toISOString(),
            row: row ? 'PURGED' : 'none',
            repairable: true,
          });
      } else if (row.status === 'READY' && BigInt(object.size) !== row.bytes) {
        this.findings.push({
          kind: 'size_mismatch',
          objectId: row.id,
          key: row.storageKey,
          bytes: Number(row.bytes),
          actualBytes: object.size,
          repairable: false,
        });
      }
    }
  }

  /** After the whole listing: READY rows whose bytes it did not hold. */
  finish(): Finding[] {
    for (const row of this.byKey.values())
      if (row.status === 'READY' && !this.listed.has(row.storageKey))
        this.findings.push({
          kind: 'missing_object',
          objectId: row.id,
          key: row.storageKey,
          bytes: Number(row.bytes),
          cachesOnly: false,
          repairable: false,
        });
    return this.findings;
  }
}

/** Uploads begun before the horizon whose newest part (if any) is older too: nobody is feeding them. */
export function abandonedUploads(
  uploads: (UnfinishedUpload & { lastPartAt: Date | null })[],
  horizons: Horizons,
): Finding[] {
  return uploads
    .filter((upload) => upload.initiated < horizons.multipartBefore)
    .filter((upload) => upload.lastPartAt === null || upload.lastPartAt < horizons.multipartBefore)
    .map((upload) => ({
      kind: 'abandoned_upload',
      key: upload.key,
      uploadId: upload.uploadId,
      initiated: upload.initiated.toISOString(),
      repairable: true,
    }));
}

/** Rows in a passing state past the horizon of whatever should have moved them on. */
export function stuckRows(rows: UnsettledRow[], horizons: Horizons): Finding[] {
  const deadline = (row: UnsettledRow): Date => {
    if (row.table === 'stored_objects' && row.status === 'UPLOADING') return horizons.uploadingBefore;
    if (row.table === 'responses') return horizons.responseBefore;
    return horizons.settleBefore;
  };
  return rows
    .filter((row) => row.since < deadline(row))
    .map((row) => ({
      kind: 'stuck_row',
      table: row.table,
      id: row.id,
      status: row.status,
      since: row.since.toISOString(),
      repairable: true,
    }));
}

/**
 * Counts that differ from the live rows pointing at the object, READY objects nothing points at, and
 * objects on their way out that rows still point at. A count is repaired by recounting, except where
 * rows point at an object being purged: its bytes may be gone, and that needs a person.
 */
export function referenceFindings(records: ReferenceRecord[]): Finding[] {
  return records
    .filter(
      (record) =>
        record.refCount !== record.live ||
        (record.status === 'READY' && record.live === 0) ||
        (record.status !== 'READY' && record.live > 0),
    )
    .map((record) => ({
      kind: 'reference_count',
      objectId: record.id,
      status: record.status,
      recorded: record.refCount,
      live: record.live,
      repairable: record.status !== 'UPLOADING' && !(record.status !== 'READY' && record.live > 0),
    }));
}

/** Live rows under deleted parents close as the delete would have closed them; a session's current container cannot. */
export function orphanedRowFindings(rows: OrphanedRow[]): Finding[] {
  return rows.map((row) => ({
    kind: 'orphaned_row',
    table: row.table,
    id: row.id,
    parent: row.parent,
    repairable: row.table !== 'sessions',
  }));
}

/**
 * Parts of a pending upload's multipart upload in blocks that no kept part or counting reservation
 * accounts for: bytes in the bucket that count against no cap. (Blocks past the last are the copied
 * last part of a completion that failed, one part under 5 MiB, overwritten by the next completion.)
 */
export function strayUploadParts(
  upload: OpenUploadMultipart,
  listed: { partNumber: number; bytes: number }[],
  accounted: Set<number>,
): Finding[] {
  const stray = new Map<number, number>();
  for (const part of listed) {
    const block = blockOfPartNumber(part.partNumber);
    if (part.bytes === 0 || block >= MAX_UPLOAD_BLOCKS || accounted.has(block)) continue;
    stray.set(block, (stray.get(block) ?? 0) + part.bytes);
  }
  if (stray.size === 0) return [];
  const blocks = [...stray].map(([block, bytes]) => ({ block, bytes }));
  return [
    {
      kind: 'stray_upload_parts',
      uploadId: upload.uploadId,
      principalId: upload.principalId,
      key: upload.storageKey,
      s3UploadId: upload.s3UploadId,
      blocks,
      bytes: blocks.reduce((sum, block) => sum + block.bytes, 0),
      repairable: true,
    },
  ];
}

/** One line per finding, for a terminal. */
export function describeFinding(finding: Finding): string {
  switch (finding.kind) {
    case 'missing_object':
      return (
        `READY object ${finding.objectId} (${finding.key}, ${finding.bytes} bytes) is not in the bucket` +
        (finding.cachesOnly ? ' (only cached previews or archives hold it: they can be made again)' : '')
      );
    case 'size_mismatch':
      return (
        `object ${finding.objectId} (${finding.key}) holds ${finding.actualBytes} bytes; ` +
        `its row says ${finding.bytes}`
      );
    case 'orphan_object':
      return `bucket object ${finding.key} (${finding.bytes} bytes, ${finding.lastModified}) has ${
        finding.row === 'none' ? 'no row' : 'a PURGED row'
      }`;
    case 'abandoned_upload':
      return `multipart upload ${finding.uploadId} of ${finding.key}, begun ${finding.initiated}, was never finished`;
    case 'stuck_row':
      return `${finding.table} ${finding.id} is ${finding.status} since ${finding.since}`;
    case 'reference_count':
      return (
        `object ${finding.objectId} (${finding.status}) counts ${finding.recorded} references; ` +
        `${finding.live} live rows point at it`
      );
    case 'stray_upload_parts':
      return (
        `pending upload ${finding.uploadId} holds ${finding.bytes} bytes in blocks ` +
        `${finding.blocks.map((block) => block.block).join(', ')} of ${finding.key} that no part accounts for`
      );
    case 'orphaned_row':
      return finding.table === 'sessions'
        ? `live session ${finding.id} has deleted container ${finding.parent} as its current one`
        : `live ${finding.table} row ${finding.id} is under deleted ${finding.parent}`;
  }
}
