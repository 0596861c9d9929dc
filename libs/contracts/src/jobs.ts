import { z } from 'zod';

/**
 * The one job contract, shared by every producer (the job bus) and every consumer (the worker's
 * processors). Payloads carry ids only: handlers re-read state, so a job that runs twice is harmless.
 * Each payload is validated against its schema when a worker takes the job, so a handler receives a
 * typed payload and never casts `job.data`.
 */
export const QUEUE = {
  purge: 'purge',
  preview: 'preview',
  /** Its own queue: a many-gigabyte archive build must not hold up purges. */
  archive: 'archive',
} as const;

export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];
export const QUEUE_NAMES: readonly QueueName[] = Object.values(QUEUE);

export const JOB = {
  /** Delete one stored object whose references reached zero (or whose upload failed). */
  purgeObject: 'purge-object',
  /** Periodic: expire files, re-enqueue purges that were never queued, reclaim stale uploads. */
  sweep: 'sweep',
  /** Convert one source to PDF for a previews row (PENDING) and store the result. */
  convertPreview: 'convert-preview',
  /** Build the ZIP of one archive row (a session's artifacts for one manifest) into the bucket. */
  buildArchive: 'build-archive',
  /** Measure the SHA-256 of an object completed unhashed (an upload's blocks): its files become "processed". */
  hashObject: 'hash-object',
} as const;

export type JobName = (typeof JOB)[keyof typeof JOB];

/** Every job a queue carries; a worker consuming that queue must handle exactly these. */
export const JOB_NAMES_BY_QUEUE = {
  [QUEUE.purge]: [JOB.purgeObject, JOB.sweep, JOB.hashObject],
  [QUEUE.preview]: [JOB.convertPreview],
  [QUEUE.archive]: [JOB.buildArchive],
} as const satisfies Record<QueueName, readonly JobName[]>;

export type JobsOf<Q extends QueueName> = (typeof JOB_NAMES_BY_QUEUE)[Q][number];

/** The request that caused a job, carried along so its logs share the request id. */
interface Traced {
  requestId?: string;
}

export interface PurgeObjectPayload extends Traced {
  objectId: string;
}

export type SweepPayload = Traced;

export interface HashObjectPayload extends Traced {
  objectId: string;
}

export interface ConvertPreviewPayload extends Traced {
  previewId: string;
  /** The row's attempt generation this job serves: a retry after a transient failure is a new job. */
  generation: number;
}

export interface BuildArchivePayload extends Traced {
  archiveId: string;
}

export interface JobPayloads {
  [JOB.purgeObject]: PurgeObjectPayload;
  [JOB.sweep]: SweepPayload;
  [JOB.convertPreview]: ConvertPreviewPayload;
  [JOB.buildArchive]: BuildArchivePayload;
  [JOB.hashObject]: HashObjectPayload;
}

const requestId = z.string().max(128).optional();
const PAYLOAD_SCHEMAS: { [N in JobName]: z.ZodType<JobPayloads[N]> } = {
  [JOB.purgeObject]: z.object({ objectId: z.uuid(), requestId }),
  [JOB.sweep]: z.object({ requestId }),
  [JOB.convertPreview]: z.object({ previewId: z.uuid(), generation: z.number().int().min(0), requestId }),
  [JOB.buildArchive]: z.object({ archiveId: z.uuid(), requestId }),
  [JOB.hashObject]: z.object({ objectId: z.uuid(), requestId }),
};

/** What BullMQ needs besides the payload: retries, retention, and the deterministic job id. */
export interface JobOptions {
  attempts: number;
  backoff?: { type: 'exponential' | 'fixed'; delay: number };
  removeOnComplete: boolean | { age: number; count?: number };
  removeOnFail: boolean | { age: number; count?: number };
}

interface JobSpec<N extends JobName> {
  queue: QueueName;
  /**
   * A deterministic id makes a second enqueue of the same work a no-op while the first is waiting or
   * running. BullMQ refuses ':' in custom ids.
   */
  jobId(payload: JobPayloads[N]): string;
  options: JobOptions;
}

export const JOBS: { [N in JobName]: JobSpec<N> } = {
  [JOB.purgeObject]: {
    queue: QUEUE.purge,
    jobId: ({ objectId }) => `purge-object-${objectId}`,
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 2_000 },
      removeOnComplete: { age: 3_600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3_600 },
    },
  },
  [JOB.sweep]: {
    queue: QUEUE.purge,
    jobId: () => 'sweep',
    options: {
      attempts: 1,
      removeOnComplete: { age: 3_600, count: 100 },
      removeOnFail: { age: 24 * 3_600, count: 100 },
    },
  },
  [JOB.hashObject]: {
    queue: QUEUE.purge,
    jobId: ({ objectId }) => `hash-object-${objectId}`,
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 2_000 },
      removeOnComplete: true,
      removeOnFail: { age: 24 * 3_600 },
    },
  },
  [JOB.convertPreview]: {
    queue: QUEUE.preview,
    // One job per previews row and attempt generation: concurrent requests for the same content share it.
    jobId: ({ previewId, generation }) => `convert-preview-${previewId}-${generation}`,
    options: {
      attempts: 3,
      backoff: { type: 'exponential', delay: 1_000 },
      removeOnComplete: { age: 3_600, count: 10_000 },
      removeOnFail: { age: 24 * 3_600 },
    },
  },
  [JOB.buildArchive]: {
    queue: QUEUE.archive,
    // One job per archive row (a session and an exact set of artifacts), however many requests ask.
    // Finished jobs are removed at once, so a row that failed and is asked for again can be queued
    // again; what a build did is recorded in its Postgres row, not in Redis.
    jobId: ({ archiveId }) => `build-archive-${archiveId}`,
    options: {
      attempts: 3,
      backoff: { type: 'exponential', delay: 5_000 },
      removeOnComplete: true,
      removeOnFail: true,
    },
  },
};

export class InvalidJobError extends Error {
  override readonly name = 'InvalidJobError';
}

export function isJobOf<Q extends QueueName>(queue: Q, name: string): name is JobsOf<Q> {
  const names: readonly string[] = JOB_NAMES_BY_QUEUE[queue];
  return names.includes(name);
}

const describeIssue = (issue: z.core.$ZodIssue) => `${issue.path.join('.') || '(root)'} ${issue.message}`;

/** The payload of a job taken from Redis, checked against its schema (InvalidJobError when it does not fit). */
export function parseJobPayload<N extends JobName>(name: N, data: unknown): JobPayloads[N] {
  const parsed = PAYLOAD_SCHEMAS[name].safeParse(data);
  if (!parsed.success)
    throw new InvalidJobError(
      `job ${name} has a malformed payload: ${parsed.error.issues.map(describeIssue).join('; ')}`,
    );
  return parsed.data;
}
