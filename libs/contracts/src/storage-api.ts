/** The internal API of the storage service (never exposed publicly; authenticated with STORAGE_TOKEN). */
export const STORAGE_HEADER = {
  /** Byte cap for a PUT: one byte more and the upload is aborted and answered 413 file_too_large. */
  maxBytes: 'x-uhp-max-bytes',
  contentType: 'x-uhp-content-type',
} as const;

/** Answer of a completed PUT /internal/objects/{key}. */
export interface StoredObjectReceipt {
  key: string;
  bytes: number;
  sha256: string;
}

/** Storage keys are made by our own services, never from client input: `objects/<uuid>` and the like. */
export const STORAGE_KEY_PATTERN = /^[a-z]+\/[0-9a-z][0-9a-z._-]{0,200}$/;

export function objectsPath(key: string): string {
  return `/internal/objects/${encodeURIComponent(key)}`;
}

/** Body of POST /internal/compose/{key}: the object `key` becomes the concatenation of `sources`, in order. */
export interface ComposeRequest {
  sources: string[];
  contentType?: string;
}

/** Answer of a compose: the new object's size and hashes (MD5 too, for the Uploads API's check). */
export interface ComposedObjectReceipt extends StoredObjectReceipt {
  md5: string;
}

export function composePath(key: string): string {
  return `/internal/compose/${encodeURIComponent(key)}`;
}
