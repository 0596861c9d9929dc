import { ListPartsCommand, type S3Client } from '@aws-sdk/client-s3';

/**
 * When the newest part of an unfinished multipart upload arrived; null when it has none yet. The storage
 * sweep and the doctor both judge an upload by it, so a slow but live upload is never called abandoned.
 */
export async function lastPartOf(s3: S3Client, bucket: string, key: string, uploadId: string): Promise<Date | null> {
  let latest: Date | null = null;
  let marker: string | undefined;
  for (;;) {
    const page = await s3.send(
      new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }),
    );
    for (const part of page.Parts ?? [])
      if (part.LastModified && (!latest || part.LastModified > latest)) latest = part.LastModified;
    if (!page.IsTruncated) return latest;
    marker = page.NextPartNumberMarker;
  }
}
