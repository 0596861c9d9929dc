import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { ApiError, APP_CONFIG, LOGGER, ObjectStore, type AppLogger, type GatewayConfig } from '@app/common';
import { JobBus } from '@app/queue';
import { type ComposeSource, isId, MIN_BLOCK_BYTES, newId } from '@app/contracts';
import {
  FileRepository,
  StoredObjectRepository,
  UploadRepository,
  type FileRow,
  type NewUpload,
  type UploadPartRow,
  type UploadRow,
} from '@app/db';
import { ObjectStager, UnitOfWork, type StagedObject } from '@app/lifecycle';
import { MAX_UPLOAD_PART_BYTES, type UploadBody } from '../http/upload-body';
import { type ArrivalTicket, PartArrivalOrder } from './part-arrival';
import { UploadAdmission } from './upload-admission';
import { STRICT_ENVELOPE_BYTES, UploadReceiver } from './upload-receiver';
import type { CompleteUploadInput, CreateUploadInput } from './upload-request';

/**
 * How long one completion holds an upload. Composing and hashing take about a second per 150 MB; past
 * this a claim whose gateway died lapses, and another completion may take the upload.
 */
const COMPLETION_CLAIM_MS = 15 * 60_000;

/** What a client refused for too many pending uploads is told to wait: a part or a completion's time. */
const PENDING_UPLOAD_RETRY_AFTER_SECONDS = 30;

/** A part request at least this long carries at least MIN_BLOCK_BYTES of data (see strictEnvelope): it is a block. */
const BLOCK_REQUEST_MIN_BYTES = MIN_BLOCK_BYTES + STRICT_ENVELOPE_BYTES;

/** The request's Content-Length, or null when it declares none (chunked). */
const declaredLength = (body: UploadBody): number | null => {
  const value = Number(body.headers['content-length']);
  return body.headers['content-length'] !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : null;
};

export interface UploadView {
  upload: UploadRow;
  file: FileRow | null;
}

const conflict = (upload: UploadRow) =>
  new ApiError(
    'upload_conflict',
    upload.status === 'completing'
      ? `Upload ${upload.id} is being completed by another request; retry once it is done.`
      : `Upload ${upload.id} is ${upload.status}, not pending.`,
  );

/**
 * Named parts that S3 can join as they are: blocks in ascending order, the last one possibly a small
 * object of its own. Their multipart upload then completes into the file's object without copying.
 */
function joinableAsBlocks(parts: UploadPartRow[]): boolean {
  return parts.every((part, index) => {
    if (part.block !== null) return index === 0 || (parts[index - 1].block ?? Infinity) < part.block;
    return index === parts.length - 1 && index > 0 && part.objectId !== null && part.objectOffset === 0n;
  });
}

/** Adjacent byte ranges of one object, in order, merged: a staged upload named whole becomes one source. */
function sourcesOf(parts: UploadPartRow[]): { key: string; start: number; end: number }[] {
  const sources: { key: string; start: number; end: number }[] = [];
  for (const part of parts) {
    const start = Number(part.objectOffset);
    const end = start + Number(part.bytes) - 1;
    const last = sources[sources.length - 1];
    if (last && last.key === part.storageKey && last.end + 1 === start) last.end = end;
    else sources.push({ key: part.storageKey!, start, end });
  }
  return sources;
}

/** The status a client sees: a pending upload past its expiry is expired, before the sweep gets to it. */
export const visibleStatus = (upload: UploadRow, now = new Date()) =>
  (upload.status === 'pending' || upload.status === 'completing') && upload.expiresAt <= now
    ? 'expired'
    : upload.status === 'completing'
      ? 'pending'
      : upload.status;

/**
 * Resumable uploads (`/v1/uploads`, OpenAI's Uploads API). An upload of 5 MiB or more owns one S3
 * multipart upload at its final key, opened when it is created. Each part of 5 MiB or more streams into
 * a block of that upload's S3 part numbers (taken in Postgres, so parts sent at once never collide);
 * smaller parts are objects of their own. Completion with blocks named in the order they were taken —
 * what a client sending its file front to back does — is one CompleteMultipartUpload: no byte is
 * copied or read again, and the file is "uploaded" until the worker has measured its SHA-256. Any other
 * order (re-sent parts, parts named out of order, an `md5` to check) first completes every block into
 * one staged object, then composes the named byte ranges on the storage side and hashes them, so the
 * file is "processed" at once. Which gateway does what to an upload is settled in Postgres (conditional
 * claims), never in memory, so any replica serves any request and racing completions cannot both win.
 */
@Injectable()
export class UploadsService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(UploadReceiver) private readonly receiver: UploadReceiver,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(PartArrivalOrder) private readonly arrivals: PartArrivalOrder,
    @Inject(UploadAdmission) private readonly admission: UploadAdmission,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async create(principalId: string, input: CreateUploadInput): Promise<UploadView> {
    const createdAt = new Date();
    // Only an upload that can hold a block gets a multipart upload (tus uploads write objects, in order).
    const storageKey = input.bytes >= MIN_BLOCK_BYTES ? `uploads/${randomUUID()}` : null;
    const s3UploadId = storageKey ? await this.store.openMultipart(storageKey, input.mimeType) : null;
    try {
      const upload = await this.createWithinLimit(principalId, {
        id: newId('upload'),
        filename: input.filename,
        purpose: input.purpose,
        bytes: input.bytes,
        mimeType: input.mimeType,
        createdAt,
        expiresAt: new Date(createdAt.getTime() + input.expiresInSeconds * 1000),
        storageKey,
        s3UploadId,
      });
      return { upload, file: null };
    } catch (error) {
      if (storageKey && s3UploadId) await this.store.abortMultipart(storageKey, s3UploadId).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Creates the upload row if the principal has fewer than UHP_MAX_PENDING_UPLOADS pending; else 429.
   * Each pending upload holds parts (and an open multipart upload) until it completes or expires.
   */
  async createWithinLimit(principalId: string, upload: NewUpload): Promise<UploadRow> {
    const max = this.config.UHP_MAX_PENDING_UPLOADS;
    const created = await this.uow.run((work) => work.uploads.createWithin(principalId, upload, max));
    if (!created)
      throw new ApiError('rate_limited', `You have ${max} uploads pending; complete or cancel one first.`, null, {
        'retry-after': String(PENDING_UPLOAD_RETRY_AFTER_SECONDS),
      });
    return created;
  }

  async get(principalId: string, id: string): Promise<UploadView> {
    const upload = await this.find(principalId, id);
    return { upload, file: await this.fileOf(principalId, upload) };
  }

  async listParts(principalId: string, id: string): Promise<UploadPartRow[]> {
    const upload = await this.find(principalId, id);
    return this.uploads.listParts(principalId, upload.id);
  }

  /**
   * A part is admitted first (UploadAdmission: room reserved against every cap before a byte is read).
   * One of 5 MiB or more then streams into the next block of the upload's multipart upload, which S3
   * takes only once the whole request has been read; a smaller one into an object of its own. Then, if
   * the upload is still pending, the part is kept in place of its reservation.
   */
  async addPart(principalId: string, id: string, body: UploadBody, arrival?: ArrivalTicket): Promise<UploadPartRow> {
    const declared = declaredLength(body);
    const request = {
      minBytes: declared === null ? 0 : Math.max(0, declared - STRICT_ENVELOPE_BYTES),
      maxBytes: Math.min(declared ?? MAX_UPLOAD_PART_BYTES, MAX_UPLOAD_PART_BYTES),
      asBlock: declared !== null && declared >= BLOCK_REQUEST_MIN_BYTES,
    };
    // Blocks are taken in the order the parts arrived here (see PartArrivalOrder).
    const { upload, reservation } = await this.arrivals.inTurn(arrival, async () =>
      this.admission.admit(principalId, await this.find(principalId, id), request),
    );
    const options = { fileField: 'data', maxBytes: reservation.bytes, isNamed: false, strictEnvelope: true };
    // Whether S3 holds (or may hold) the block: its room then stays taken until the upload ends.
    let stored = false;
    let mayBeStored = false;
    try {
      return await this.admission.whileStreaming(reservation, async () => {
        if (reservation.block === null) {
          const received = await this.receiver.receive(body, principalId, () => undefined, options);
          return await this.keepPart(principalId, upload.id, reservation.id, received.staged, null);
        }
        const block = reservation.block;
        let receipt: { bytes: number; sha256: string };
        try {
          ({ stored: receipt } = await this.receiver.receiveInto(
            body,
            () => undefined,
            { ...options, endsWithRequest: true },
            {
              write: async (stream, put) => {
                let sent = false;
                stream.once('end', () => (sent = true));
                try {
                  const written = await this.store.putBlock(upload.storageKey!, upload.s3UploadId!, block, stream, put);
                  stored = true;
                  return written;
                } catch (error) {
                  // Storage refuses (4xx) before it writes; once it has the block, other failures may follow the write.
                  mayBeStored = sent && !(error instanceof ApiError && error.status < 500);
                  throw error;
                }
              },
              discard: async () => undefined,
            },
          ));
        } catch (error) {
          const now = await this.uploads.findForOwner(principalId, upload.id);
          if (now && (now.status !== 'pending' || !now.s3UploadId)) throw conflict(now);
          throw error;
        }
        return await this.keepPart(principalId, upload.id, reservation.id, null, { block, ...receipt });
      });
    } catch (error) {
      throw await this.admission.giveBack(reservation, error, {
        mayBeStored: stored || mayBeStored,
        what: 'part',
        param: 'data',
      });
    }
  }

  private keepPart(
    principalId: string,
    uploadId: string,
    reservationId: string,
    staged: (StagedObject & { sha256: string }) | null,
    block: { block: number; bytes: number; sha256: string } | null,
  ): Promise<UploadPartRow> {
    const bytes = staged?.bytes ?? block!.bytes;
    return this.uow.run(
      async (work) => {
        const locked = await work.uploads.lockShared(principalId, uploadId);
        if (!locked) throw ApiError.notFound('upload');
        if (locked.status !== 'pending' || visibleStatus(locked) !== 'pending') throw conflict(locked);
        // The reservation admitted at most these bytes; it becomes the part, so the caps still hold.
        if (!(await work.uploads.settleReservation(reservationId))) throw conflict(locked);
        if (staged) await work.adopt(staged);
        return work.uploads.addPart(principalId, {
          id: newId('uploadPart'),
          uploadId,
          objectId: staged?.id ?? null,
          block: block?.block ?? null,
          bytes,
          sha256: staged?.sha256 ?? block!.sha256,
        });
      },
      { staged: staged ? [staged] : [] },
    );
  }

  /**
   * Claims the upload (one completion at a time, across gateways), checks the named parts against
   * `bytes`, makes the file's object (see the class comment), checks the MD5, and keeps the file. Any
   * failed check gives the claim back: the upload stays pending for a corrected retry. Completing a
   * completed upload returns its file.
   */
  async complete(principalId: string, id: string, input: CompleteUploadInput): Promise<UploadView> {
    return this.completeUpload(principalId, await this.find(principalId, id), input);
  }

  /** `complete` for an upload the caller found under its own protocol (tus completes its uploads here too). */
  async completeUpload(principalId: string, current: UploadRow, input: CompleteUploadInput): Promise<UploadView> {
    const viewNow = async () => {
      const upload = (await this.uploads.findForOwner(principalId, current.id)) ?? current;
      return { upload, file: await this.fileOf(principalId, upload) };
    };
    if (current.status === 'completed') return viewNow();
    const claim = await this.uploads.claim(principalId, current.id, new Date(Date.now() + COMPLETION_CLAIM_MS));
    if (!claim.won) {
      if (!claim.upload) throw ApiError.notFound('upload');
      if (claim.upload.status === 'completed') return viewNow();
      throw conflict(claim.upload.status === 'pending' ? { ...claim.upload, status: 'expired' } : claim.upload);
    }
    const upload = claim.upload;
    let completed = false;
    try {
      const started = Date.now();
      let parts = (await this.namedParts(principalId, upload, input.partIds)).filter((part) => part.bytes > 0n);
      let how: 'blocks' | 'whole' | 'composed';
      let object: StagedObject & { md5?: string };
      let kept: 'staged' | 'retained';
      const joined =
        input.md5 === null && upload.s3UploadId && parts.length > 0 && joinableAsBlocks(parts)
          ? await this.joinBlocks(principalId, upload, parts)
          : null;
      if (joined) {
        object = joined;
        how = 'blocks';
        kept = 'staged';
      } else {
        if (upload.s3UploadId) parts = await this.stageBlocks(principalId, upload, input.partIds);
        const sources = sourcesOf(parts);
        const whole = sources.length === 1 && (await this.wholeObject(parts[0], sources[0]));
        if (whole) {
          const hashed =
            whole.sha256 && input.md5 === null
              ? { sha256: whole.sha256, md5: undefined }
              : await this.store.hash(whole.storageKey, { md5: input.md5 !== null });
          object = { ...whole, bytes: Number(upload.bytes), sha256: hashed.sha256, md5: hashed.md5 ?? undefined };
          how = 'whole';
          kept = 'retained';
        } else {
          object = await this.stager.stageComposed(principalId, sources as ComposeSource[], upload.mimeType);
          how = 'composed';
          kept = 'staged';
        }
        if (input.md5 !== null && object.md5 !== input.md5) {
          if (kept === 'staged') await this.stager.discard([object]);
          throw ApiError.invalid(`md5 does not match the parts' bytes (their MD5 is ${object.md5}).`, 'md5');
        }
      }
      const view = await this.uow.run(
        async (work) => {
          const fileId = newId('file');
          if (kept === 'staged') await work.adopt(object);
          else if (!(await work.retain(principalId, object.id))) throw conflict(upload);
          const file = await work.files.create(principalId, {
            id: fileId,
            objectId: object.id,
            filename: upload.filename,
            bytes: object.bytes,
            contentType: upload.mimeType,
            sha256: object.sha256,
            purpose: upload.purpose,
            createdAt: new Date(),
            expiresAt: null,
          });
          if (!(await work.uploads.markCompleted(principalId, upload.id, fileId))) throw conflict(upload);
          await work.uploads.closeMultipart(principalId, upload.id);
          // Every part goes, named or not: the file's object holds the bytes it needs.
          await work.release(await work.uploads.dropParts(principalId, upload.id));
          return { upload: { ...upload, status: 'completed' as const, fileId, s3UploadId: null }, file };
        },
        { staged: kept === 'staged' ? [object] : [] },
      );
      completed = true;
      if (object.sha256 === null) await this.jobs.hash([object.id]);
      this.logger.info(
        {
          uploadId: upload.id,
          fileId: view.file.id,
          bytes: object.bytes,
          parts: parts.length,
          how,
          ms: Date.now() - started,
        },
        'upload completed',
      );
      return view;
    } finally {
      if (!completed) await this.uploads.unclaim(principalId, upload.id);
    }
  }

  /**
   * The named blocks (and a small last part) joined as they are, into the upload's own key; null when the
   * multipart upload holds other parts too (a re-sent or failed part), which some S3 servers cannot drop.
   */
  private async joinBlocks(principalId: string, upload: UploadRow, parts: UploadPartRow[]) {
    const last = parts[parts.length - 1];
    try {
      return await this.stager.stageBlocks(
        principalId,
        upload.storageKey!,
        upload.s3UploadId!,
        parts.flatMap((part) => (part.block === null ? [] : [part.block])),
        last.block === null ? last.storageKey! : undefined,
      );
    } catch (error) {
      if (error instanceof ApiError && error.code === 'upload_conflict') return null;
      throw error;
    }
  }

  /**
   * Completes the upload's multipart upload with every part it holds into one staged object, which the
   * block parts then point into (one reference each); returns the named parts as they are now.
   */
  private async stageBlocks(principalId: string, upload: UploadRow, partIds: string[]): Promise<UploadPartRow[]> {
    const blockParts = (await this.uploads.listParts(principalId, upload.id))
      .filter((part) => part.block !== null)
      .sort((a, b) => a.block! - b.block!);
    if (blockParts.length === 0) {
      const open = await this.uploads.closeMultipart(principalId, upload.id);
      if (open) await this.store.abortMultipart(open.storageKey, open.s3UploadId).catch(() => undefined);
    } else {
      const staged = await this.stager.stageBlocks(principalId, upload.storageKey!, upload.s3UploadId!, 'all');
      const offsets = new Map(staged.placements.map((placed) => [placed.block, placed.offset]));
      const lost = blockParts.find((part) => !offsets.has(part.block!));
      if (lost) {
        await this.stager.discard([staged]);
        this.logger.error({ uploadId: upload.id, block: lost.block }, 'a kept block is missing from S3');
        throw new ApiError('service_unavailable', 'Object storage lost a part of this upload.');
      }
      await this.uow.run(
        async (work) => {
          await work.adopt(staged);
          for (let i = 1; i < blockParts.length; i++) await work.retain(principalId, staged.id);
          await work.uploads.markStaged(
            staged.id,
            blockParts.map((part) => ({ id: part.id, offset: offsets.get(part.block!)! })),
          );
          await work.uploads.closeMultipart(principalId, upload.id);
        },
        { staged: [staged] },
      );
      this.logger.info({ uploadId: upload.id, blocks: blockParts.length, bytes: staged.bytes }, 'upload blocks staged');
    }
    return this.namedParts(principalId, upload, partIds).then((parts) => parts.filter((part) => part.bytes > 0n));
  }

  /** The object `source` spans entirely, if it does: the file can point at it as it is. */
  private async wholeObject(
    part: UploadPartRow,
    source: { key: string; start: number; end: number },
  ): Promise<{ id: string; principalId: string; storageKey: string; sha256: string | null } | null> {
    if (!part.objectId || source.start !== 0) return null;
    const object = await this.objects.find(part.objectId);
    return object && Number(object.bytes) === source.end + 1
      ? { id: object.id, principalId: object.principalId, storageKey: object.storageKey, sha256: object.sha256 }
      : null;
  }

  async cancel(principalId: string, id: string): Promise<UploadView> {
    return this.cancelUpload(principalId, await this.find(principalId, id));
  }

  /** `cancel` for an upload the caller found under its own protocol (tus terminates its uploads here too). */
  async cancelUpload(principalId: string, upload: UploadRow): Promise<UploadView> {
    const { view, multipart } = await this.uow.run(async (work) => {
      const cancelled = await work.uploads.markCancelled(principalId, upload.id);
      if (!cancelled) {
        const now = await work.uploads.findForOwner(principalId, upload.id);
        if (now?.status === 'cancelled') return { view: { upload: now, file: null }, multipart: null };
        throw conflict(now ?? upload);
      }
      await work.release(await work.uploads.dropParts(principalId, upload.id));
      const multipart = await work.uploads.closeMultipart(principalId, upload.id);
      return { view: { upload: { ...cancelled, s3UploadId: null }, file: null }, multipart };
    });
    // Its blocks go with it; if this fails, the storage sweep aborts it (its upload is no longer pending).
    if (multipart)
      await this.store
        .abortMultipart(multipart.storageKey, multipart.s3UploadId)
        .catch((error: unknown) =>
          this.logger.warn(
            { err: error, uploadId: upload.id },
            'could not abort the multipart upload now; the sweep will',
          ),
        );
    return view;
  }

  /** An upload of the Uploads API; another protocol's upload (tus) is not found here, as another principal's is not. */
  private async find(principalId: string, id: string): Promise<UploadRow> {
    const upload = isId('upload', id) ? await this.uploads.findForOwner(principalId, id) : null;
    if (!upload || upload.protocol !== 'openai') throw ApiError.notFound('upload');
    return upload;
  }

  private async fileOf(principalId: string, upload: UploadRow): Promise<FileRow | null> {
    return upload.fileId ? this.files.findForOwner(principalId, upload.fileId) : null;
  }

  /** The parts `partIds` names, in that order; each must be this upload's, and together exactly `bytes`. */
  private async namedParts(principalId: string, upload: UploadRow, partIds: string[]): Promise<UploadPartRow[]> {
    const received = new Map((await this.uploads.listParts(principalId, upload.id)).map((part) => [part.id, part]));
    const unknown = partIds.filter((partId) => !received.has(partId));
    if (unknown.length > 0)
      throw ApiError.invalid(
        `part_ids names parts this upload does not have: ${unknown.slice(0, 5).join(', ')}.`,
        'part_ids',
      );
    const parts = partIds.map((partId) => received.get(partId)!);
    const total = parts.reduce((sum, part) => sum + Number(part.bytes), 0);
    if (total !== Number(upload.bytes))
      throw ApiError.invalid(
        `The named parts hold ${total} bytes; the upload was created with bytes ${upload.bytes}.`,
        'bytes',
      );
    return parts;
  }
}
