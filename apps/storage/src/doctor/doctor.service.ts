import type { ConsistencyRepository, StoredObjectRepository } from '@app/db';
import type { BucketInventoryClient, UnfinishedUpload } from './bucket-inventory.client';
import {
  abandonedUploads,
  BucketComparison,
  orphanedRowFindings,
  referenceFindings,
  strayUploadParts,
  stuckRows,
  type Finding,
  type Horizons,
} from './consistency-checks';

const PAGE = 1000;

export interface RepairOutcome {
  finding: Finding;
  repaired: boolean;
  note?: string;
}

/**
 * The consistency checker: reads the rows and the bucket, reports what disagrees, and (on request)
 * applies the safe repairs. A finding is confirmed once more before it is reported, so a request that
 * was half-way through when the listing was taken does not show up as an inconsistency.
 */
export class DoctorService {
  constructor(
    private readonly consistency: ConsistencyRepository,
    private readonly objects: StoredObjectRepository,
    private readonly bucket: BucketInventoryClient,
  ) {}

  async check(horizons: Horizons): Promise<Finding[]> {
    // Rows before the listing: an object uploaded meanwhile has its row already (rows come before bytes).
    const comparison = new BucketComparison(horizons);
    for (let after: string | null = null; ;) {
      const rows = await this.consistency.objectsPage(after, PAGE);
      comparison.addRows(rows);
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1].id;
    }
    for await (const page of this.bucket.objects()) comparison.addListing(page);
    const bucketFindings = await this.confirmed(comparison.finish());

    const uploads: (UnfinishedUpload & { lastPartAt: Date | null })[] = [];
    const live = await this.consistency.liveUploadKeys();
    for await (const page of this.bucket.unfinishedUploads())
      for (const upload of page)
        if (upload.initiated < horizons.multipartBefore && !live.has(upload.key))
          uploads.push({ ...upload, lastPartAt: await this.bucket.lastPartAt(upload.key, upload.uploadId) });

    return [
      ...bucketFindings,
      ...abandonedUploads(uploads, horizons),
      ...(await this.strayUploadParts()),
      ...stuckRows(await this.consistency.unsettledRows(), horizons),
      ...referenceFindings(await this.consistency.referenceMismatches()),
      ...orphanedRowFindings(await this.consistency.orphanedRows()),
    ];
  }

  /**
   * Each pending upload's multipart upload against its parts and reservations. The listing comes first: a
   * block S3 took before it had its reservation before, so the rows read after account for it.
   */
  private async strayUploadParts(): Promise<Finding[]> {
    const findings: Finding[] = [];
    for (let after: string | null = null; ;) {
      const uploads = await this.consistency.openUploadMultipartsPage(after, PAGE);
      for (const upload of uploads) {
        const listed = await this.bucket.parts(upload.storageKey, upload.s3UploadId);
        if (!listed) continue;
        findings.push(...strayUploadParts(upload, listed, await this.consistency.accountedBlocks(upload.uploadId)));
      }
      if (uploads.length < PAGE) return findings;
      after = uploads[uploads.length - 1].uploadId;
    }
  }

  /** Looks again at each bucket finding: the row or the object may have moved on since the listing. */
  private async confirmed(findings: Finding[]): Promise<Finding[]> {
    const kept: Finding[] = [];
    for (const finding of findings) {
      if (finding.kind === 'orphan_object') {
        const row = await this.consistency.objectByKey(finding.key);
        if (row && row.status !== 'PURGED') continue;
      } else if (finding.kind === 'missing_object' || finding.kind === 'size_mismatch') {
        const row = await this.consistency.objectByKey(finding.key);
        if (row?.status !== 'READY') continue;
        const size = await this.bucket.sizeOf(finding.key);
        if (size !== null && BigInt(size) === row.bytes) continue;
        if (finding.kind === 'missing_object' && (await this.consistency.heldOnlyByCaches(finding.objectId))) {
          kept.push({ ...finding, cachesOnly: true, repairable: true });
          continue;
        }
      }
      kept.push(finding);
    }
    return kept;
  }

  /**
   * Applies the safe repairs, rows first (closing orphaned rows and recounting may leave objects to
   * purge), then the bucket. Each repair re-checks its condition; what it no longer finds it leaves.
   */
  async repair(findings: Finding[], horizons: Horizons): Promise<RepairOutcome[]> {
    const outcomes: RepairOutcome[] = [];
    const order: Finding['kind'][] = [
      'orphaned_row',
      'reference_count',
      'stuck_row',
      'abandoned_upload',
      'stray_upload_parts',
      'orphan_object',
      'missing_object',
      'size_mismatch',
    ];
    let orphansClosed = false;
    for (const kind of order)
      for (const finding of findings.filter((f) => f.kind === kind)) {
        if (!finding.repairable) {
          outcomes.push({ finding, repaired: false, note: 'needs a person: not repaired' });
          continue;
        }
        if (finding.kind === 'orphaned_row' && orphansClosed) {
          outcomes.push({ finding, repaired: true });
          continue;
        }
        try {
          outcomes.push({ finding, ...(await this.repairOne(finding, horizons)) });
          if (finding.kind === 'orphaned_row') orphansClosed = true;
        } catch (error) {
          outcomes.push({ finding, repaired: false, note: `repair failed: ${(error as Error).message}` });
        }
      }
    return outcomes;
  }

  private async repairOne(finding: Finding, horizons: Horizons): Promise<{ repaired: boolean; note?: string }> {
    switch (finding.kind) {
      case 'orphaned_row': {
        const { purge } = await this.consistency.closeOrphanedRows();
        await this.purge(purge);
        return { repaired: true };
      }
      case 'reference_count': {
        const { changed, purge } = await this.consistency.repairReferenceCount(finding.objectId, finding.recorded);
        if (purge) await this.purge([finding.objectId]);
        return changed ? { repaired: true } : { repaired: false, note: 'changed meanwhile: not repaired' };
      }
      case 'stuck_row':
        return { repaired: await this.settle(finding, horizons) };
      case 'abandoned_upload':
        await this.bucket.abort(finding.key, finding.uploadId);
        return { repaired: true };
      case 'stray_upload_parts': {
        // S3 cannot drop one part of a multipart upload (and servers such as Ceph refuse to complete
        // without every part), so the bytes stay until the upload ends; held, they count against its caps.
        const held = await this.consistency.holdStrayBlocks(
          {
            uploadId: finding.uploadId,
            principalId: finding.principalId,
            storageKey: finding.key,
            s3UploadId: finding.s3UploadId,
          },
          finding.blocks,
        );
        return held ? { repaired: true } : { repaired: false, note: 'the upload ended meanwhile: nothing to hold' };
      }
      case 'missing_object': {
        const { dropped, purge } = await this.consistency.dropCachesOfLostObject(finding.objectId);
        await this.purge(purge);
        return dropped
          ? { repaired: true }
          : { repaired: false, note: 'a file or artifact holds it now: not repaired' };
      }
      case 'orphan_object': {
        const row = await this.consistency.objectByKey(finding.key);
        if (row && row.status !== 'PURGED') return { repaired: false, note: 'a row claims it now: not deleted' };
        await this.bucket.delete(finding.key);
        return { repaired: true };
      }
      default:
        return { repaired: false, note: 'needs a person: not repaired' };
    }
  }

  private async settle(finding: Finding & { kind: 'stuck_row' }, horizons: Horizons): Promise<boolean> {
    switch (finding.table) {
      case 'stored_objects':
        if (finding.status === 'UPLOADING') {
          const reclaimed = await this.consistency.reclaimUploads([finding.id], horizons.uploadingBefore);
          await this.purge(reclaimed);
          return reclaimed.length === 1;
        }
        return (await this.purge([finding.id])) === 1;
      case 'previews':
        return (await this.consistency.failStalePreviews([finding.id], horizons.settleBefore)) === 1;
      case 'archives':
        return (await this.consistency.dropStaleArchives([finding.id], horizons.settleBefore)) === 1;
      case 'responses':
        return (await this.consistency.failOverdueResponses([finding.id], horizons.responseBefore)) === 1;
    }
  }

  /** What the worker's purge job does: bytes first, then the row (kept PURGED while deleted rows point at it). */
  private async purge(objectIds: string[]): Promise<number> {
    let purged = 0;
    for (const id of objectIds) {
      const object = await this.objects.find(id);
      if (!object || object.status !== 'PURGING' || object.refCount > 0) continue;
      await this.bucket.delete(object.storageKey);
      if (await this.objects.finishPurge(id)) purged++;
    }
    return purged;
  }
}
