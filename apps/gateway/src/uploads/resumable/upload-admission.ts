import { Inject, Injectable } from '@nestjs/common';
import { ApiError, APP_CONFIG, LOGGER, type AppLogger, type GatewayConfig } from '@app/common';
import { MAX_UPLOAD_BLOCKS, MIN_BLOCK_BYTES } from '@app/contracts';
import { UploadRepository, type UploadReservationRow, type UploadRow } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';

/** A reservation counts this long without renewal; the request renews it well within. */
const RESERVATION_TTL_MS = 2 * 60_000;
const RENEW_EVERY_MS = 30_000;
/** What a client refused for the bytes its pending uploads hold is told to wait: a part's or a completion's time. */
const PENDING_BYTES_RETRY_AFTER_SECONDS = 30;

/** Derived, the per-principal cap never falls below this: a small file limit must still let a batch upload at once. */
const MIN_DERIVED_PENDING_UPLOAD_BYTES = 1024 ** 3;

/**
 * The per-principal cap on bytes held by pending uploads: UHP_MAX_PENDING_UPLOAD_BYTES, or derived as one
 * largest file re-sent once (twice UHP_MAX_FILE_BYTES), and at least 1 GiB.
 */
export const maxPendingUploadBytes = (config: GatewayConfig): number =>
  config.UHP_MAX_PENDING_UPLOAD_BYTES || Math.max(2 * config.UHP_MAX_FILE_BYTES, MIN_DERIVED_PENDING_UPLOAD_BYTES);

/**
 * How many bytes a part or PATCH may carry, as far as its request says before a byte is read: at least
 * `minBytes` (from a declared length), at most `maxBytes`. `asBlock`: a part big enough to be a block.
 */
export interface PartRequest {
  minBytes: number;
  maxBytes: number;
  asBlock: boolean;
}

export interface Admitted {
  upload: UploadRow;
  reservation: UploadReservationRow;
}

/**
 * Admits each part of a resumable upload (and each tus PATCH) before a byte of it is written: against
 * the upload's own cap (twice `bytes` for a part of the Uploads API, where parts may be re-sent;
 * `Upload-Length` for tus) and the principal's cap on bytes its pending uploads hold. The request gets a
 * reservation of the room it may fill, taken under the upload's row lock and the principal's advisory
 * lock, so parts racing on any gateways cannot together pass a cap; it streams at most that many bytes,
 * and keeping the part turns the reservation into the part in one transaction. Another cap (a storage
 * quota) is one more check here.
 */
@Injectable()
export class UploadAdmission {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Reserves room for one part of `upload` (pending, of the caller's protocol) or refuses it with 409, 413 or 429. */
  admit(principalId: string, upload: UploadRow, request: PartRequest): Promise<Admitted> {
    return this.uow.run(async (work) => {
      const locked = await work.uploads.lockForAdmission(principalId, upload.id);
      if (!locked) throw ApiError.notFound('upload');
      if (locked.status !== 'pending' || locked.expiresAt <= new Date())
        throw new ApiError('upload_conflict', `Upload ${upload.id} is not pending.`);
      const held = await work.uploads.heldBytes(principalId, upload.id);
      const uploadCap = locked.protocol === 'tus' ? Number(locked.bytes) : 2 * Number(locked.bytes);
      const principalCap = maxPendingUploadBytes(this.config);
      const uploadRoom = Math.max(0, uploadCap - held.upload);
      const principalRoom = Math.max(0, principalCap - held.principal);
      const refuses = (room: number) => request.minBytes > room || (room === 0 && request.maxBytes > 0);
      if (refuses(uploadRoom))
        throw new ApiError(
          'file_too_large',
          locked.protocol === 'tus'
            ? `The upload has room for ${uploadRoom} more bytes of its Upload-Length ${locked.bytes}.`
            : `The parts of this upload may hold twice its bytes (${uploadCap}); ${uploadRoom} bytes are left.`,
          locked.protocol === 'tus' ? 'Upload-Length' : 'data',
        );
      if (refuses(principalRoom))
        throw new ApiError(
          'rate_limited',
          `Your pending uploads hold ${held.principal} of the ${principalCap} bytes they may; ` +
            'complete or cancel one first.',
          null,
          { 'retry-after': String(PENDING_BYTES_RETRY_AFTER_SECONDS) },
        );
      const bytes = Math.min(request.maxBytes, uploadRoom, principalRoom);
      const block =
        request.asBlock && bytes >= MIN_BLOCK_BYTES && locked.s3UploadId
          ? await work.uploads.takeBlock(principalId, locked.id, MAX_UPLOAD_BLOCKS)
          : null;
      const reservation = await work.uploads.reserve(principalId, locked.id, {
        bytes,
        block,
        until: new Date(Date.now() + RESERVATION_TTL_MS),
      });
      return { upload: locked, reservation };
    });
  }

  /** Keeps the reservation counting while `work` streams; a gateway that dies stops renewing it. */
  async whileStreaming<T>(reservation: UploadReservationRow, work: () => Promise<T>): Promise<T> {
    const timer = setInterval(() => {
      this.uploads
        .renewReservation(reservation.id, new Date(Date.now() + RESERVATION_TTL_MS))
        .catch((error: unknown) => this.logger.warn({ err: error }, 'could not renew an upload reservation'));
    }, RENEW_EVERY_MS);
    timer.unref();
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /**
   * The request kept nothing: its room is free again, unless `mayBeStored` (its block may be in the multipart
   * upload: S3 took it, or might have), when it stays taken until the upload ends and the bytes go with it.
   * Returns the error to answer with: a cap hit while streaming names the room admitted, not a file limit.
   */
  async giveBack(
    reservation: UploadReservationRow,
    failure: unknown,
    request: { mayBeStored: boolean; what: 'part' | 'PATCH'; param: string },
  ): Promise<unknown> {
    try {
      if (request.mayBeStored) await this.uploads.holdReservation(reservation.id);
      else await this.uploads.releaseReservation(reservation.id);
    } catch (error) {
      // It lapses by itself; the sweep then holds it if the storage journal shows the block.
      this.logger.warn({ err: error, reservation: reservation.id }, 'could not give back an upload reservation');
    }
    if (failure instanceof ApiError && failure.code === 'file_too_large')
      return new ApiError(
        'file_too_large',
        `The ${request.what} holds more than the ${reservation.bytes} bytes admitted for it.`,
        request.param,
      );
    return failure;
  }
}
