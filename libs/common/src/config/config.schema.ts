import { z } from 'zod';

/**
 * The one configuration schema of uhp-files. Each app validates its part at start and refuses to
 * boot with every bad variable listed. Defaults are the embedded local ones (`npm start`).
 */
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const TiB = 1024 * GiB;
/** S3's largest object: a file limit above it could never be kept. */
const S3_MAX_OBJECT_BYTES = 5 * TiB;

const integer = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a non-negative integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .default(fallback);

const boolean = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .default(fallback);

const url = (fallback: string) => z.url({ message: 'must be a URL' }).default(fallback);

const secret = (fallback: string) => z.string().min(1).default(fallback);

const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info');

export const DEV_STORAGE_TOKEN = 'uhp-dev-storage-token';
/** A storage token shorter than this is guessable enough that production refuses it. */
export const MIN_STORAGE_TOKEN_CHARS = 32;

/**
 * Where a service runs. `production` (the chart sets it) refuses to start on a setting that is only safe on a
 * laptop; `development` (npm start, docker compose, the tests) keeps each such convenience and logs a warning.
 */
const environment = {
  UHP_ENV: z
    .enum(['development', 'production'], { message: 'must be development or production' })
    .default('development'),
};

/** Connection limits of every service's HTTP server: idle bodies, slow headers, idle keep-alive. */
const http = {
  /** No byte of a request body, or of a streaming response, for this long: the connection is closed. */
  UHP_IDLE_TIMEOUT_MS: integer(60_000, 1_000),
  /** The request's headers must arrive within this long. */
  UHP_HEADERS_TIMEOUT_MS: integer(30_000, 1_000),
  /** An idle keep-alive connection is closed after this long (above the usual 60 s of load balancers). */
  UHP_KEEP_ALIVE_TIMEOUT_MS: integer(65_000, 1_000),
  /**
   * On SIGTERM: readiness fails at once, no new connection is taken, and requests and jobs in flight get
   * this long to finish (a job that does not is handed back to the queue) before the process closes.
   */
  SHUTDOWN_GRACE_MS: integer(25_000, 0, 600_000),
  /** When set, Prometheus metrics are also served on this port (GET /metrics), off the API port. */
  METRICS_PORT: integer(0, 0, 65535),
};

export const httpTimeoutsOf = (config: {
  UHP_IDLE_TIMEOUT_MS: number;
  UHP_HEADERS_TIMEOUT_MS: number;
  UHP_KEEP_ALIVE_TIMEOUT_MS: number;
}) => ({
  idleMs: config.UHP_IDLE_TIMEOUT_MS,
  headersMs: config.UHP_HEADERS_TIMEOUT_MS,
  keepAliveMs: config.UHP_KEEP_ALIVE_TIMEOUT_MS,
});

/**
 * The largest file created any way: one request, inline, the Uploads API, tus, container files, agent
 * artifacts. Gateway and storage read it and are given the same value.
 */
const maxFileBytes = { UHP_MAX_FILE_BYTES: integer(64 * GiB, 1, S3_MAX_OBJECT_BYTES) };

/**
 * Removed variables: set, they stop the start, since ignoring one would drop a limit its operator meant
 * to hold. UHP_MAX_UPLOAD_BYTES capped resumable uploads alone; UHP_MAX_FILE_BYTES caps them now.
 */
const removedVariables = {
  UHP_MAX_UPLOAD_BYTES: z
    .undefined({
      message:
        'was removed: UHP_MAX_FILE_BYTES now caps every file, resumable uploads (/v1/uploads, /v1/tus) too; ' +
        'set that instead',
    })
    .optional(),
};

/**
 * The file limits as each way of creating a file applies them. UHP_MAX_FILE_BYTES bounds all of them, so
 * a smaller limit of one way lowers it there and a larger one cannot lift that way past it.
 */
export const fileLimitsOf = (config: {
  UHP_MAX_FILE_BYTES: number;
  UHP_MAX_SINGLE_REQUEST_FILE_BYTES: number;
  UHP_MAX_INLINE_FILE_BYTES: number;
}) => ({
  /** Any file: what a resumable upload (Uploads API, tus) may declare. */
  maxFileBytes: config.UHP_MAX_FILE_BYTES,
  /** A file streamed in by one request: POST /v1/files, container file uploads, artifacts an agent writes. */
  maxSingleRequestFileBytes: Math.min(config.UHP_MAX_SINGLE_REQUEST_FILE_BYTES, config.UHP_MAX_FILE_BYTES),
  /** A file inline in a response's input (a data URL). */
  maxInlineFileBytes: Math.min(config.UHP_MAX_INLINE_FILE_BYTES, config.UHP_MAX_FILE_BYTES),
});

/** What a JSON body carries besides one inline file at its limit (the rest of the request). */
export const REQUEST_BYTES_BESIDES_INLINE_FILE = 64 * 1024;

/**
 * The smallest JSON body limit that still takes one inline file of `maxInlineFileBytes` (base64 grows it by a
 * third): a smaller UHP_MAX_REQUEST_BYTES would advertise an inline limit no request could reach.
 */
export const requestBytesFloorOf = (maxInlineFileBytes: number) =>
  4 * Math.ceil(maxInlineFileBytes / 3) + REQUEST_BYTES_BESIDES_INLINE_FILE;

/** The JSON body limit: UHP_MAX_REQUEST_BYTES as given, or derived from the inline limit when 0. */
export const maxRequestBytesOf = (config: Parameters<typeof fileLimitsOf>[0] & { UHP_MAX_REQUEST_BYTES: number }) =>
  config.UHP_MAX_REQUEST_BYTES || requestBytesFloorOf(fileLimitsOf(config).maxInlineFileBytes);

/** The Node runtime of every service. */
const runtime = {
  /**
   * After a full collection V8 lets the old generation grow to (1 + this/100) × the live heap before the next
   * (libs/common/src/lifecycle/heap-growth.ts says why a fixed factor); 0 leaves V8's own heuristic.
   */
  UHP_HEAP_GROWING_PERCENT: integer(100, 0, 1000),
};

const database = {
  DATABASE_URL: url('postgresql://postgres@127.0.0.1:5432/uhp'),
  DATABASE_POOL_SIZE: integer(10, 1, 200),
  /**
   * To get a connection: from the pool when all are busy, or a new one opened to Postgres. A request that cannot
   * have one in time is answered 503 with Retry-After.
   */
  DATABASE_CONNECT_TIMEOUT_MS: integer(10_000, 100, 600_000),
  /**
   * Longest a query may run (Postgres' statement_timeout; the client also gives up 2 s after it, for a server
   * that stopped answering altogether). 0: no limit.
   */
  DATABASE_STATEMENT_TIMEOUT_MS: integer(30_000, 0, 3_600_000),
};
/** A tool that reads only the database (the keys CLI). */
export const databaseConfigSchema = z.object(database);
const redis = {
  REDIS_URL: url('redis://127.0.0.1:6379'),
  /**
   * secret: Redis's password when REDIS_URL carries none (a URL's own password wins). Kept apart so the
   * URL can live in plain configuration and the password in a secret (Kubernetes: the chart's Secret).
   */
  REDIS_PASSWORD: z.string().min(1).optional(),
  /** The prefix of every queue key in Redis: two installations sharing one Redis need different ones. */
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 characters of A-Za-z0-9_.-')
    .default('bull'),
  /**
   * Longest a Redis command (an enqueue, a queue count) may wait for its answer. A request that needs the queue
   * (a preview, an archive) is then answered 503, and Redis is marked down until it answers PING again.
   */
  REDIS_COMMAND_TIMEOUT_MS: integer(5_000, 100, 600_000),
};

/** Any origin may call the API (`*`), or only these exact origins. */
export type CorsOrigins = '*' | string[];

/**
 * An exact origin as a browser sends it in `Origin`: scheme, host and port, nothing else. A path, a trailing
 * slash or an upper-case host would never equal what a browser sends, so such an entry could only be a mistake.
 */
export function isExactOrigin(value: string): boolean {
  if (!/^https?:\/\//.test(value)) return false;
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
}

/** `*`, or a comma-separated list of exact origins (https://app.example.com); anything else stops the start. */
const corsOrigins = z
  .string()
  .default('*')
  .transform((value, context): CorsOrigins => {
    if (value.trim() === '*') return '*';
    const origins = value
      .split(',')
      .map((origin) => origin.trim())
      .filter(Boolean);
    const junk = origins.filter((origin) => !isExactOrigin(origin));
    if (origins.length === 0 || junk.length > 0)
      context.addIssue({
        code: 'custom',
        message:
          'must be * or a comma-separated list of exact origins such as https://app.example.com ' +
          `(scheme, host and port only: no path, no trailing slash, lower case)${
            junk.length ? `; not an origin: ${junk.map((origin) => JSON.stringify(origin)).join(', ')}` : ''
          }`,
      });
    return [...new Set(origins)];
  });

export const WORKER_QUEUE_NAMES = ['preview', 'archive', 'purge'] as const;
export type WorkerQueue = (typeof WORKER_QUEUE_NAMES)[number];
const storageClient = {
  STORAGE_URL: url('http://127.0.0.1:8081'),
  /** secret */
  STORAGE_TOKEN: secret(DEV_STORAGE_TOKEN),
  /**
   * To connect to the storage service, and how long a call may go without its answer or without the service
   * reading what is sent before the storage service's /healthz is asked: when that does not answer within the
   * same time either, every call to it fails with 503 at once until it answers again. Calls whose storage
   * side works on S3 (finishing an upload) wait for S3's own bound on top (S3_REQUEST_TIMEOUT_MS).
   */
  STORAGE_REQUEST_TIMEOUT_MS: integer(30_000, 1_000, 600_000),
};
/**
 * How long S3 may keep silent: to connect, to send the first byte of its answer, or between two bytes while
 * a body streams either way (there is no total limit: a large healthy transfer is never cut). A call that
 * waits this long marks S3 down: calls to it fail with 503 at once until HeadBucket answers again.
 */
const s3RequestTimeout = { S3_REQUEST_TIMEOUT_MS: integer(30_000, 1_000, 600_000) };

const gatewaySettings = z.object({
  ...environment,
  ...http,
  ...runtime,
  ...database,
  ...redis,
  ...storageClient,
  /**
   * Downloads read their bytes straight from S3 through short-lived URLs the storage service signs (its
   * credentials stay there): one Node hop instead of two. The gateway then needs a route to S3_ENDPOINT;
   * false relays every read through the storage service.
   */
  STORAGE_DIRECT_READS: boolean(true),
  ...s3RequestTimeout,
  LOG_LEVEL: logLevel,
  HOST: z.string().default('0.0.0.0'),
  PORT: integer(8080, 1, 65535),
  /** secret: "alice=sk_...,bob=sk_..." creates principals and keys at start (idempotent). */
  UHP_API_KEYS: z.string().default(''),
  ...maxFileBytes,
  ...removedVariables,
  /**
   * Largest file one request streams in (POST /v1/files, container file uploads, agent artifacts): a body
   * that large holds a connection and an upload slot from its first byte to its last, and a cut-off one
   * starts over, where a resumable upload resumes.
   */
  UHP_MAX_SINGLE_REQUEST_FILE_BYTES: integer(5 * GiB, 1, S3_MAX_OBJECT_BYTES),
  UHP_MAX_INLINE_FILE_BYTES: integer(20 * MiB, 1),
  /**
   * The JSON body limit; 0 derives it: base64 size of the inline limit plus 64 KiB. A value below that floor is
   * refused at start rather than raised, so the limit served is the one configured.
   */
  UHP_MAX_REQUEST_BYTES: integer(0),
  UHP_PUBLIC_BASE_URL: z.url({ message: 'must be a URL' }).optional(),
  PREVIEW_ENABLED: boolean(true),
  PREVIEW_TIMEOUT_MS: integer(60_000, 1_000),
  /** How long a rejected body is still read and discarded so the client sees the answer (docs/api.md §1). */
  UHP_DRAIN_TIMEOUT_MS: integer(30_000, 0),
  /** Input files (inline or by id) one response may carry. */
  UHP_MAX_INPUT_FILES: integer(64, 1, 1000),
  /** The agent of a response that names none (docs/api.md §4). */
  AGENT_DEFAULT: z.enum(['report', 'http']).default('report'),
  /** The operator's agent service for agent "http"; unset means that agent is not offered. */
  AGENT_HTTP_URL: z.url({ message: 'must be a URL' }).optional(),
  /** secret: sent to the agent service as `Authorization: Bearer …` when set. */
  AGENT_HTTP_TOKEN: z.string().min(1).optional(),
  /** Base URL the agent service uses to call back (task files, artifact uploads); defaults to UHP_PUBLIC_BASE_URL. */
  AGENT_CALLBACK_BASE_URL: z.url({ message: 'must be a URL' }).optional(),
  /** Wall-clock limit of one response's agent run; its task token expires with it. */
  AGENT_TIMEOUT_MS: integer(120_000, 1_000),
  /** How long GET …/files/archive waits for a build before it answers 202 with the progress. */
  ARCHIVE_WAIT_MS: integer(10_000, 0, 120_000),
  /**
   * A request waiting for a preview or an archive is woken by the job's completion event; without one (lost in
   * a Redis blip) it re-reads its row this often, so a lost event delays the answer and never hangs it.
   */
  JOB_WAIT_FALLBACK_MS: integer(1_500, 50, 3_600_000),
  /** Per principal, per gateway process: uploads streaming at once (POST /v1/files and container uploads). */
  UHP_MAX_CONCURRENT_UPLOADS: integer(8, 1, 10_000),
  /** Per principal, per gateway process: downloads, previews and archives being served at once. */
  UHP_MAX_CONCURRENT_DOWNLOADS: integer(32, 1, 10_000),
  /** Per principal, per gateway process: responses whose agent is running. */
  UHP_MAX_RESPONSES_IN_FLIGHT: integer(8, 1, 10_000),
  /** Per principal, across the installation: previews queued or converting. */
  UHP_MAX_PENDING_PREVIEWS: integer(16, 1, 100_000),
  /** Per principal, across the installation: resumable uploads (/v1/uploads, /v1/tus) not yet completed or ended. */
  UHP_MAX_PENDING_UPLOADS: integer(64, 1, 100_000),
  /**
   * Per principal, across the installation: bytes the parts of its pending resumable uploads may hold,
   * parts being written included. 0 derives it: twice UHP_MAX_FILE_BYTES (one largest file, re-sent
   * once), and at least 1 GiB.
   */
  UHP_MAX_PENDING_UPLOAD_BYTES: integer(0),
  /** Per principal, across the installation: archive builds queued or running. */
  UHP_MAX_ARCHIVE_BUILDS: integer(2, 1, 10_000),
  /**
   * GET /metrics on the public API port too. Off by default: anyone who reaches the API would read the
   * metrics; scrape METRICS_PORT instead. UHP_ENV=production refuses true.
   */
  UHP_API_METRICS: boolean(false),
  /**
   * Largest session archive (ZIP) a build may write, as the worker and storage are given it: the gateway only
   * advertises it (GET /v1/limits archive.max_bytes).
   */
  ARCHIVE_MAX_BYTES: integer(64 * GiB, 1),
  /**
   * Which web pages may call the public /v1 API from a browser (CORS): `*` for any (keys are bearer tokens a page
   * must hold, never cookies), or a comma-separated list of exact origins, answered with `Vary: Origin`.
   */
  UHP_CORS_ORIGINS: corsOrigins,
});

const storageSettings = z.object({
  ...environment,
  ...http,
  ...runtime,
  ...storageClient,
  /** The journal of S3 multipart uploads (s3_multipart_uploads) lives here. */
  ...database,
  LOG_LEVEL: logLevel,
  HOST: z.string().default('127.0.0.1'),
  STORAGE_PORT: integer(8081, 1, 65535),
  S3_ENDPOINT: url('http://127.0.0.1:7480'),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')
    .default('uhp-files'),
  /**
   * secret: static S3 keys, both or neither. Neither: the AWS SDK's default credential chain (environment,
   * web identity such as EKS IRSA, ECS/EC2 instance roles, ~/.aws), so a pod can get its access from its
   * service account. `npm start` and the test stacks pass the local server's keys explicitly.
   */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  /** secret */
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: boolean(true),
  ...s3RequestTimeout,
  /** With ARCHIVE_MAX_BYTES, the largest object the storage service accepts; parts are sized so it fits in 10,000. */
  ...maxFileBytes,
  ...removedVariables,
  S3_PART_SIZE_BYTES: integer(16 * MiB, 5 * MiB, 5 * GiB),
  S3_UPLOAD_QUEUE_SIZE: integer(4, 1, 32),
  /**
   * Bytes all uploads of this process may hold in part buffers at once; an upload waits for a part's
   * worth rather than allocate it. Memory stays near this (plus the process's baseline) under any load.
   */
  STORAGE_MEMORY_BUDGET_BYTES: integer(256 * MiB, 5 * MiB),
  /** Connections to S3 at most (each download and each part in flight holds one). */
  S3_MAX_SOCKETS: integer(1024, 1, 65_536),
  /**
   * Largest session archive the worker may store; the hard cap of a put is the larger of this and UHP_MAX_FILE_BYTES.
   */
  ARCHIVE_MAX_BYTES: integer(64 * GiB, 1),
  /** Multipart uploads older than this were abandoned by a crash and are aborted by the sweeper. */
  STORAGE_ABANDONED_UPLOAD_SECONDS: integer(6 * 3600, 1),
  /** A multipart upload whose owner object is gone is aborted after this long without a part. */
  STORAGE_ORPHAN_UPLOAD_SECONDS: integer(300, 1),
  STORAGE_SWEEP_INTERVAL_MS: integer(10 * 60_000, 0),
});

/** Both S3 keys or neither: half a pair is a mistake, not a request for the SDK's default chain. */
const bothS3KeysOrNeither = (
  config: { S3_ACCESS_KEY_ID?: string; S3_SECRET_ACCESS_KEY?: string },
  context: z.RefinementCtx,
) => {
  if ((config.S3_ACCESS_KEY_ID === undefined) !== (config.S3_SECRET_ACCESS_KEY === undefined))
    context.addIssue({
      code: 'custom',
      path: [config.S3_ACCESS_KEY_ID === undefined ? 'S3_ACCESS_KEY_ID' : 'S3_SECRET_ACCESS_KEY'],
      message: 'set both S3 keys, or neither (then the AWS SDK default credential chain is used)',
    });
};

/** A setting production refuses and development keeps, with what to set instead. */
export interface UnsafeSetting {
  variable: string;
  /** Why it is unsafe outside a laptop, then what to set: one line, read by an operator. */
  message: string;
}

export type ServiceName = 'gateway' | 'storage' | 'worker';

/** Hostnames that reach only the machine itself (or none at all): no client elsewhere can follow such a URL. */
export function isLoopbackUrl(value: string): boolean {
  const host = new URL(value).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    /^127\./.test(host) ||
    host === '0.0.0.0' ||
    host === '::' ||
    host === '::1' ||
    /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(host)
  );
}

const PUBLIC_URL_FIX = 'set it to the URL clients reach the gateway at (e.g. https://files.example.com)';
const STORAGE_TOKEN_FIX =
  `set a random secret of at least ${MIN_STORAGE_TOKEN_CHARS} characters, the same on gateway, storage and ` +
  'workers (e.g. openssl rand -base64 36)';

/**
 * The laptop conveniences a configuration relies on: UHP_ENV=production refuses each at start, development
 * logs each as a warning. One list for both, so what a laptop warns about is exactly what production refuses.
 */
export function unsafeSettingsOf(
  service: ServiceName,
  config: { STORAGE_TOKEN: string; UHP_PUBLIC_BASE_URL?: string; UHP_API_METRICS?: boolean },
): UnsafeSetting[] {
  const unsafe: UnsafeSetting[] = [];
  if (service === 'gateway') {
    if (config.UHP_PUBLIC_BASE_URL === undefined)
      unsafe.push({
        variable: 'UHP_PUBLIC_BASE_URL',
        message: `is unset, so download and upload URLs in answers point to this machine's loopback; ${PUBLIC_URL_FIX}`,
      });
    else if (isLoopbackUrl(config.UHP_PUBLIC_BASE_URL))
      unsafe.push({
        variable: 'UHP_PUBLIC_BASE_URL',
        message: `points to a loopback address no client elsewhere can reach; ${PUBLIC_URL_FIX}`,
      });
    if (config.UHP_API_METRICS)
      unsafe.push({
        variable: 'UHP_API_METRICS',
        message: 'serves /metrics on the public API port; set UHP_API_METRICS=false and scrape METRICS_PORT instead',
      });
  }
  if (config.STORAGE_TOKEN === DEV_STORAGE_TOKEN)
    unsafe.push({
      variable: 'STORAGE_TOKEN',
      message: `is unset or the development token, which anyone can read in the source; ${STORAGE_TOKEN_FIX}`,
    });
  else if (config.STORAGE_TOKEN.length < MIN_STORAGE_TOKEN_CHARS)
    unsafe.push({
      variable: 'STORAGE_TOKEN',
      message: `is shorter than ${MIN_STORAGE_TOKEN_CHARS} characters; ${STORAGE_TOKEN_FIX}`,
    });
  return unsafe;
}

/** UHP_ENV=production: every unsafe setting is a problem of the start, listed beside the others. */
const refusedInProduction =
  (service: ServiceName) =>
  (
    config: { UHP_ENV: string; STORAGE_TOKEN: string; UHP_PUBLIC_BASE_URL?: string; UHP_API_METRICS?: boolean },
    context: z.RefinementCtx,
  ) => {
    if (config.UHP_ENV !== 'production') return;
    for (const { variable, message } of unsafeSettingsOf(service, config))
      context.addIssue({ code: 'custom', path: [variable], message: `${message} (UHP_ENV=production)` });
  };

/**
 * A limit is served as configured or the start is refused with its floor named: never raised in silence, so
 * GET /v1/limits and the enforcement agree with what the operator wrote.
 */
const limitsHonouredExactly = (config: z.infer<typeof gatewaySettings>, context: z.RefinementCtx) => {
  const floor = requestBytesFloorOf(fileLimitsOf(config).maxInlineFileBytes);
  if (config.UHP_MAX_REQUEST_BYTES !== 0 && config.UHP_MAX_REQUEST_BYTES < floor)
    context.addIssue({
      code: 'custom',
      path: ['UHP_MAX_REQUEST_BYTES'],
      message:
        `must be at least ${floor} (the base64 size of the inline file limit plus 64 KiB), or 0 to derive it; ` +
        'or lower UHP_MAX_INLINE_FILE_BYTES',
    });
  // Every part of a pending upload counts against this: below the file limit, no upload of max_upload_bytes fits.
  if (config.UHP_MAX_PENDING_UPLOAD_BYTES !== 0 && config.UHP_MAX_PENDING_UPLOAD_BYTES < config.UHP_MAX_FILE_BYTES)
    context.addIssue({
      code: 'custom',
      path: ['UHP_MAX_PENDING_UPLOAD_BYTES'],
      message:
        `must be at least UHP_MAX_FILE_BYTES (${config.UHP_MAX_FILE_BYTES}), so one upload of the largest file ` +
        'fits, or 0 to derive it; or lower UHP_MAX_FILE_BYTES',
    });
};

export const gatewayConfigSchema = gatewaySettings
  .superRefine(limitsHonouredExactly)
  .superRefine(refusedInProduction('gateway'));

export const storageConfigSchema = storageSettings
  .superRefine(bothS3KeysOrNeither)
  .superRefine(refusedInProduction('storage'));

/** The static S3 keys when both are set; undefined leaves the AWS SDK to its default credential chain. */
export const staticS3CredentialsOf = (config: { S3_ACCESS_KEY_ID?: string; S3_SECRET_ACCESS_KEY?: string }) =>
  config.S3_ACCESS_KEY_ID !== undefined && config.S3_SECRET_ACCESS_KEY !== undefined
    ? { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY }
    : undefined;

const workerSettings = z.object({
  ...environment,
  ...http,
  ...runtime,
  ...database,
  ...redis,
  ...storageClient,
  ...s3RequestTimeout,
  /**
   * Archive builds and previews read object bytes straight from S3 through URLs the storage service signs,
   * as the gateway does. Off by default: the chart's worker egress policy lets a pool reach only the storage
   * service, Postgres and Redis; give the pool a route to S3_ENDPOINT before turning it on.
   */
  STORAGE_DIRECT_READS: boolean(false),
  LOG_LEVEL: logLevel,
  HOST: z.string().default('0.0.0.0'),
  WORKER_PORT: integer(8082, 1, 65535),
  /** Which queues this worker consumes: any of preview, archive, purge, comma-separated (all by default). */
  WORKER_QUEUES: z
    .string()
    .default(WORKER_QUEUE_NAMES.join(','))
    .transform((value) =>
      value
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(WORKER_QUEUE_NAMES)).min(1, 'must name at least one queue'))
    .transform((names) => [...new Set(names)]),
  PURGE_CONCURRENCY: integer(4, 1, 64),
  SWEEP_INTERVAL_MS: integer(15_000, 1_000),
  /** An UPLOADING object older than this was left by a crashed gateway and is reclaimed. */
  STALE_UPLOAD_SECONDS: integer(24 * 3600, 60),
  /** A PURGING object this long with no purge done gets its job again (its enqueue was lost: Redis down, say). */
  LOST_PURGE_SECONDS: integer(60, 1),
  /**
   * How long a job stays claimed by a worker that stopped renewing its claim (killed, or cut off from Redis)
   * before another worker takes it over; the claim is renewed every half of this.
   */
  JOB_LOCK_MS: integer(30_000, 1_000, 600_000),
  /** Rows of deleted files, containers and sessions are kept this long (cursor anchors), then pruned. */
  TOMBSTONE_RETENTION_SECONDS: integer(7 * 24 * 3600, 60),
  /** false: this worker runs no converters and takes no preview jobs. */
  PREVIEW_ENABLED: boolean(true),
  /** Preview jobs in parallel per worker process. */
  PREVIEW_CONCURRENCY: integer(2, 1, 32),
  /** Warm LibreOffice processes per worker; each converts one document at a time. */
  PREVIEW_OFFICE_POOL_SIZE: integer(2, 1, 16),
  /** A LibreOffice process is replaced after this many conversions (it grows with use). */
  PREVIEW_OFFICE_MAX_CONVERSIONS: integer(200, 1),
  /** Wall-clock limit of one conversion; past it the converter's whole process group is killed. */
  PREVIEW_CONVERSION_TIMEOUT_MS: integer(45_000, 1_000),
  /** Address-space limit of each LibreOffice process. */
  PREVIEW_OFFICE_MEMORY_BYTES: integer(3 * GiB, 256 * MiB),
  /** Private scratch space of the converters (profiles, inputs, outputs); emptied per conversion. */
  PREVIEW_WORK_DIR: z.string().min(1).optional(),
  /**
   * Network isolation of the converters, the strongest that works here (a network namespace, else a seccomp filter
   * with Landlock): true = take it, and run converters without one (with a warning) where none works; `required` =
   * refuse to run converters then; false = skip it (the deployment isolates the preview workers' network itself).
   */
  PREVIEW_ISOLATE_NETWORK: z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'required'], { message: 'must be true, false or required' })
    .transform((v): 'prefer' | 'require' | 'off' =>
      v === 'required' ? 'require' : v === 'true' || v === '1' || v === 'yes' ? 'prefer' : 'off',
    )
    .default('prefer'),
  /**
   * A root worker runs its converters as this uid and the next 18 (one per LibreOffice slot, Chromium, the tools),
   * gid equal; keep the ranges of two root workers on one host apart.
   */
  PREVIEW_SANDBOX_UID: integer(64_000, 1_000, 2 ** 31 - 100),
  /** Office documents above this are refused (permanent too_large) before they are fetched. */
  PREVIEW_MAX_OFFICE_INPUT_BYTES: integer(100 * MiB, 1),
  /** HTML, Markdown and text above this are refused before they are fetched (they are read into memory). */
  PREVIEW_MAX_TEXT_INPUT_BYTES: integer(20 * MiB, 1),
  /** Image files above this are refused before they are fetched (besides the decoded-pixel limit). */
  PREVIEW_MAX_IMAGE_INPUT_BYTES: integer(50 * MiB, 1),
  /** Archive builds in parallel per worker process; each holds one object stream in and one upload out. */
  ARCHIVE_CONCURRENCY: integer(1, 1, 16),
  /** Largest ZIP a build may write (set the same on the storage service); a larger session's build fails. */
  ARCHIVE_MAX_BYTES: integer(64 * GiB, 1),
});

export const workerConfigSchema = workerSettings.superRefine(refusedInProduction('worker'));

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type StorageConfig = z.infer<typeof storageConfigSchema>;
export type WorkerConfig = z.infer<typeof workerConfigSchema>;

/**
 * The consistency checker (`npm run doctor`, apps/storage/src/cli/doctor.ts): an operator tool run where the
 * storage service's S3 credentials are, with the database URL besides. Its horizons default to the services'
 * own, so what it reports is what the services' sweeps would not fix by themselves.
 */
export const doctorConfigSchema = storageSettings
  .pick({
    LOG_LEVEL: true,
    S3_ENDPOINT: true,
    S3_REGION: true,
    S3_BUCKET: true,
    S3_ACCESS_KEY_ID: true,
    S3_SECRET_ACCESS_KEY: true,
    S3_FORCE_PATH_STYLE: true,
    S3_REQUEST_TIMEOUT_MS: true,
    STORAGE_ABANDONED_UPLOAD_SECONDS: true,
  })
  .extend({
    ...database,
    STALE_UPLOAD_SECONDS: workerSettings.shape.STALE_UPLOAD_SECONDS,
    /**
     * How long a state the services settle by themselves may last before it is a finding: a bucket object with
     * no row, a PURGING object, a pending preview or archive, a response past its deadline.
     */
    DOCTOR_GRACE_SECONDS: integer(15 * 60),
  })
  .superRefine(bothS3KeysOrNeither);
export type DoctorConfig = z.infer<typeof doctorConfigSchema>;
