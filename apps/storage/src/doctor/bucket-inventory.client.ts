import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { staticS3CredentialsOf, type DoctorConfig } from '@app/common';
import { lastPartOf, partsOf } from '../objects/last-part';

export interface BucketObject {
  key: string;
  size: number;
  lastModified: Date;
}

export interface UnfinishedUpload {
  key: string;
  uploadId: string;
  initiated: Date;
}

/**
 * What the consistency checker sees of the bucket: its listing, its unfinished multipart uploads, and the
 * two safe repairs (delete an object no row owns, abort an abandoned upload). Same credentials and
 * settings as the storage service, which is why the checker runs where the storage service does.
 */
export class BucketInventoryClient {
  private readonly s3: S3Client;
  readonly bucket: string;

  constructor(config: DoctorConfig) {
    this.bucket = config.S3_BUCKET;
    this.s3 = new S3Client({
      endpoint: config.S3_ENDPOINT,
      region: config.S3_REGION,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      // Absent: the SDK's default chain, as for the storage service itself.
      credentials: staticS3CredentialsOf(config),
      maxAttempts: 3,
    });
  }

  /** Every object of the bucket, a listing page at a time (memory stays at one page). */
  async *objects(): AsyncGenerator<BucketObject[]> {
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, ContinuationToken: token }));
      yield (page.Contents ?? []).map((item) => ({
        key: item.Key!,
        size: Number(item.Size ?? 0),
        lastModified: item.LastModified ?? new Date(0),
      }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async *unfinishedUploads(): AsyncGenerator<UnfinishedUpload[]> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.s3.send(
        new ListMultipartUploadsCommand({ Bucket: this.bucket, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
      );
      yield (page.Uploads ?? []).map((upload) => ({
        key: upload.Key!,
        uploadId: upload.UploadId!,
        initiated: upload.Initiated ?? new Date(0),
      }));
      if (!page.IsTruncated) return;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }

  /** When the newest part of an unfinished upload arrived; null when it has none. */
  lastPartAt(key: string, uploadId: string): Promise<Date | null> {
    return lastPartOf(this.s3, this.bucket, key, uploadId);
  }

  /** The parts S3 holds of an unfinished multipart upload; null when S3 no longer knows the upload. */
  async parts(key: string, uploadId: string): Promise<{ partNumber: number; bytes: number }[] | null> {
    try {
      return (await partsOf(this.s3, this.bucket, key, uploadId)).map((part) => ({
        partNumber: part.PartNumber!,
        bytes: Number(part.Size ?? 0),
      }));
    } catch (error) {
      // NoSuchUpload, or NoSuchKey from servers such as Ceph once the upload was completed or aborted.
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return null;
      throw error;
    }
  }

  /** The size of an object, or null when there is none (to confirm a finding before reporting it). */
  async sizeOf(key: string): Promise<number | null> {
    try {
      const head = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return Number(head.ContentLength ?? 0);
    } catch (error) {
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async abort(key: string, uploadId: string): Promise<void> {
    await this.s3.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
  }

  destroy(): void {
    this.s3.destroy();
  }
}
