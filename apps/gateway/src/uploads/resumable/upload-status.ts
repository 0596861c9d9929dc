import { ApiError } from '@app/common';
import type { FileRow, UploadRow } from '@app/db';

/** An upload as its API answers it: the row, and its file once it is completed. */
export interface UploadView {
  upload: UploadRow;
  file: FileRow | null;
}

/** The status a client sees: a pending upload past its expiry is expired, before the sweep gets to it. */
export const visibleStatus = (upload: UploadRow, now = new Date()) =>
  (upload.status === 'pending' || upload.status === 'completing') && upload.expiresAt <= now
    ? 'expired'
    : upload.status === 'completing'
      ? 'pending'
      : upload.status;

/** 409 for an upload another request holds (a completion) or that is no longer pending. */
export const uploadConflict = (upload: UploadRow) =>
  new ApiError(
    'upload_conflict',
    upload.status === 'completing'
      ? `Upload ${upload.id} is being completed by another request; retry once it is done.`
      : `Upload ${upload.id} is ${upload.status}, not pending.`,
  );
