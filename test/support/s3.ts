import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  HeadObjectCommand,
} from '@aws-sdk/client-s3';
import { S3, TEST_BUCKET } from './env';

/** Direct S3 access for tests: to prove what is (and is not) in the bucket. */
export const s3 = new S3Client({
  endpoint: S3.endpoint,
  region: S3.region,
  forcePathStyle: true,
  credentials: { accessKeyId: S3.accessKeyId, secretAccessKey: S3.secretAccessKey },
});

export async function ensureBucket(bucket = TEST_BUCKET): Promise<void> {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    const name = (error as Error).name;
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
  }
}

/** Deletes every object and aborts every unfinished upload of a bucket of a test's own. */
export async function emptyBucket(bucket: string): Promise<void> {
  for (const key of await objectKeys(bucket)) await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
  for (const upload of uploads.Uploads ?? [])
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId }));
}

export async function unfinishedUploads(bucket = TEST_BUCKET): Promise<string[]> {
  const out = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
  return (out.Uploads ?? []).map((upload) => `${upload.Key}#${upload.UploadId}`);
}

export async function objectKeys(bucket = TEST_BUCKET): Promise<Set<string>> {
  const keys = new Set<string>();
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const item of page.Contents ?? []) keys.add(item.Key!);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

export async function objectExists(key: string, bucket = TEST_BUCKET): Promise<boolean> {
  try {
    await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return true;
  } catch {
    return false;
  }
}

/** Takes an object out of the bucket behind the services' back, as an operator's mistake or a lost disk would. */
export async function deleteObject(key: string, bucket = TEST_BUCKET): Promise<void> {
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
}
