import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '@app/common';
import type { UploadPartRow } from '@app/db';
import { ObjectStager } from '@app/lifecycle';
import type { CompletedObject, CompletionRequest } from './completed-object';

/**
 * Named parts that S3 can join as they are: blocks in ascending order, the last one possibly a small
 * object of its own. Their multipart upload then completes into the file's object without copying.
 */
export function joinableAsBlocks(parts: UploadPartRow[]): boolean {
  return parts.every((part, index) => {
    if (part.block !== null) return index === 0 || (parts[index - 1].block ?? Infinity) < part.block;
    return index === parts.length - 1 && index > 0 && part.objectId !== null && part.objectOffset === 0n;
  });
}

/**
 * The fast way: the named blocks (and a small last part) joined as they are into the upload's own key,
 * one CompleteMultipartUpload with no byte copied or read again; the worker measures the SHA-256 later.
 * Null when it does not apply: an `md5` to check, parts out of order, or a multipart upload that holds
 * other parts too (a re-sent or failed part), which some S3 servers cannot drop.
 */
@Injectable()
export class JoinBlocksCompletion {
  constructor(@Inject(ObjectStager) private readonly stager: ObjectStager) {}

  async complete({ principalId, upload, parts, md5 }: CompletionRequest): Promise<CompletedObject | null> {
    if (md5 !== null || !upload.s3UploadId || parts.length === 0 || !joinableAsBlocks(parts)) return null;
    const last = parts[parts.length - 1];
    try {
      const object = await this.stager.stageBlocks(
        principalId,
        upload.storageKey!,
        upload.s3UploadId,
        parts.flatMap((part) => (part.block === null ? [] : [part.block])),
        last.block === null ? last.storageKey! : undefined,
      );
      return { object, how: 'blocks', kept: 'staged' };
    } catch (error) {
      if (error instanceof ApiError && error.code === 'upload_conflict') return null;
      throw error;
    }
  }
}
