import { Inject, Injectable } from '@nestjs/common';
import { ApiError, APP_CONFIG, LOGGER, ObjectStore, type AppLogger, type GatewayConfig } from '@app/common';
import type { NewUpload, UploadRow } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import { type UploadView, uploadConflict } from './upload-status';

/** An upload's own expiry when the request names none (OpenAI's: one hour after creation). */
export const DEFAULT_UPLOAD_EXPIRY_SECONDS = 3600;

/** What a client refused for too many pending uploads is told to wait: a part or a completion's time. */
const PENDING_UPLOAD_RETRY_AFTER_SECONDS = 30;

/** The start and the cancelled end of a resumable upload, whichever protocol (Uploads API or tus) it speaks. */
@Injectable()
export class PendingUploads {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

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

  /** Cancels `upload`, which the caller found under its own protocol; its parts and blocks go with it. */
  async cancel(principalId: string, upload: UploadRow): Promise<UploadView> {
    const { view, multipart } = await this.uow.run(async (work) => {
      const cancelled = await work.uploads.markCancelled(principalId, upload.id);
      if (!cancelled) {
        const now = await work.uploads.findForOwner(principalId, upload.id);
        if (now?.status === 'cancelled') return { view: { upload: now, file: null }, multipart: null };
        throw uploadConflict(now ?? upload);
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
}
