/**
 * The job contract shared by producers (gateway) and consumers (worker). Payloads carry ids only:
 * handlers re-read state, so a job that runs twice is harmless.
 */
export const QUEUE = {
  purge: 'purge',
  preview: 'preview',
  /** Its own queue: a many-gigabyte archive build must not hold up purges. */
  archive: 'archive',
} as const;

export const JOB = {
  /** Delete one stored object whose references reached zero (or whose upload failed). */
  purgeObject: 'purge-object',
  /** Periodic: expire files, re-enqueue purges that were never queued, reclaim stale uploads. */
  sweep: 'sweep',
  /** Convert one source to PDF for a previews row (PENDING) and store the result. */
  convertPreview: 'convert-preview',
  /** Build the ZIP of one archive row (a session's artifacts for one manifest) into the bucket. */
  buildArchive: 'build-archive',
} as const;

export interface PurgeObjectPayload {
  objectId: string;
  requestId?: string;
}

export type SweepPayload = Record<string, never>;

export interface ConvertPreviewPayload {
  previewId: string;
  /** The row's attempt generation this job serves (see previewJobId). */
  generation: number;
  requestId?: string;
}

export interface BuildArchivePayload {
  archiveId: string;
  requestId?: string;
}

export interface JobPayloads {
  [JOB.purgeObject]: PurgeObjectPayload;
  [JOB.sweep]: SweepPayload;
  [JOB.convertPreview]: ConvertPreviewPayload;
  [JOB.buildArchive]: BuildArchivePayload;
}

export const JOB_NAMES_BY_QUEUE = {
  [QUEUE.purge]: [JOB.purgeObject, JOB.sweep],
  [QUEUE.preview]: [JOB.convertPreview],
  [QUEUE.archive]: [JOB.buildArchive],
} as const;

/** Deterministic job ids make a second enqueue of the same work a no-op while the first is pending. */
export function purgeJobId(objectId: string): string {
  return `purge-object-${objectId}`;
}

export const PURGE_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: { age: 3_600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3_600 },
} as const;

export const SWEEP_JOB_ID = 'sweep';

/**
 * One job per previews row and attempt generation: concurrent requests for the same content add the
 * same id and so share one conversion; a retry after a transient failure gets a new generation.
 */
export function previewJobId(previewId: string, generation: number): string {
  return `convert-preview-${previewId}-${generation}`;
}

export const PREVIEW_JOB_OPTIONS = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 3_600, count: 10_000 },
  removeOnFail: { age: 24 * 3_600 },
} as const;

/**
 * One job per session and exact set of artifacts (the manifest hash): a second request for the same
 * archive while the build is queued or running adds nothing. BullMQ job ids cannot contain ':'.
 */
export function archiveJobId(sessionId: string, manifestHash: string): string {
  return `archive-${sessionId}-${manifestHash}`;
}

/**
 * Finished jobs are removed at once, so the id is free again if the same manifest comes back later
 * (an artifact added, then deleted). What a build did is recorded in its Postgres row, not in Redis.
 */
export const ARCHIVE_JOB_OPTIONS = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: true,
  removeOnFail: true,
} as const;
