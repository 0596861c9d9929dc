import { ListPartsCommand, type Part, type S3Client } from '@aws-sdk/client-s3';

/** Every part S3 holds of an unfinished multipart upload, in part-number order. */
export async function partsOf(s3: S3Client, bucket: string, key: string, uploadId: string): Promise<Part[]> {
  const parts: Part[] = [];
  let marker: string | undefined;
  for (;;) {
    const page = await s3.send(
      new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }),
    );
    parts.push(...(page.Parts ?? []));
    if (!page.IsTruncated) return parts.sort((a, b) => a.PartNumber! - b.PartNumber!);
    marker = page.NextPartNumberMarker;
  }
}

/**
 * When the newest part of an unfinished multipart upload arrived; null when it has none yet. The storage
 * sweep and the doctor both judge an upload by it, so a slow but live upload is never called abandoned.
 */
export async function lastPartOf(s3: S3Client, bucket: string, key: string, uploadId: string): Promise<Date | null> {
  let latest: Date | null = null;
  for (const part of await partsOf(s3, bucket, key, uploadId))
    if (part.LastModified && (!latest || part.LastModified > latest)) latest = part.LastModified;
  return latest;
}
