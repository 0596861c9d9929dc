import { ApiError } from '@app/common';
import type { UploadPartRow, UploadRow } from '@app/db';
import type { StagedObject } from '@app/lifecycle';

/** What a completion strategy is given: the upload's named parts (none empty), their bytes checked against `bytes`. */
export interface CompletionRequest {
  principalId: string;
  upload: UploadRow;
  parts: UploadPartRow[];
  /** The MD5 the client says the file has, to check; null when it names none. */
  md5: string | null;
}

/**
 * The file's object, made by one strategy. `staged`: a new object the completion's unit of work adopts
 * (or discards); `retained`: an object a part already holds, which the file takes one more reference to.
 */
export interface CompletedObject {
  object: StagedObject & { md5?: string };
  how: 'blocks' | 'whole' | 'composed';
  kept: 'staged' | 'retained';
}

/** A byte range of one stored object. */
export interface ByteSource {
  key: string;
  start: number;
  end: number;
}

/** Adjacent byte ranges of one object, in order, merged: a staged upload named whole becomes one source. */
export function sourcesOf(parts: UploadPartRow[]): ByteSource[] {
  const sources: ByteSource[] = [];
  for (const part of parts) {
    const start = Number(part.objectOffset);
    const end = start + Number(part.bytes) - 1;
    const last = sources[sources.length - 1];
    if (last && last.key === part.storageKey && last.end + 1 === start) last.end = end;
    else sources.push({ key: part.storageKey!, start, end });
  }
  return sources;
}

/** 400 for an `md5` the parts' bytes do not have. */
export const md5Mismatch = (actual: string | undefined) =>
  ApiError.invalid(`md5 does not match the parts' bytes (their MD5 is ${actual}).`, 'md5');
