import { z } from 'zod';

/**
 * The one configuration schema of uhp-files. Each app validates its part at start and refuses to
 * boot with every bad variable listed. Defaults are the embedded local ones (`npm start`).
 *
 * Every variable carries its explanation as zod metadata (`.describe()`, `.meta()`): docs/configuration.md is
 * generated from it (config-reference.ts), so the reference says what the code reads. Markdown is allowed.
 */
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const TiB = 1024 * GiB;
/** S3's largest object: a file limit above it could never be kept. */
const S3_MAX_OBJECT_BYTES = 5 * TiB;

/**
 * What the configuration reference shows of a variable besides its description. The helpers below set `type`
 * (`integer` with its bounds, `removed` for a variable that stops the start); `secret` marks a value to keep in a
 * secret store; `defaultText` says what an unset optional or a 0 that derives a value means.
 */
export type VariableMeta = {
  description?: string;
  type?: string;
  minimum?: number;
  maximum?: number;
  secret?: boolean;
  defaultText?: string;
};
const meta = (value: VariableMeta) => value;

const integer = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a non-negative integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .default(fallback)
    .meta(meta({ type: 'integer', minimum: min, maximum: max }));

const boolean = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .default(fallback)
    .meta(meta({ type: 'boolean' }));

const url = (fallback: string) =>
  z
    .url({ message: 'must be a URL' })
    .default(fallback)
    .meta(meta({ type: 'URL' }));

const optionalUrl = () =>
  z
    .url({ message: 'must be a URL' })
    .optional()
    .meta(meta({ type: 'URL' }));

const secret = (fallback: string) =>
  z
    .string()
    .min(1)
    .default(fallback)
    .meta(meta({ type: 'string', secret: true }));

const optionalSecret = () =>
  z
    .string()
    .min(1)
    .optional()
    .meta(meta({ type: 'string', secret: true }));

const logLevel = z
  .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  .default('info')
  .describe("The log level (pino's levels).");

export const DEV_STORAGE_TOKEN = 'uhp-dev-storage-token';
/** A storage token shorter than this is guessable enough that production refuses it. */
export const MIN_STORAGE_TOKEN_CHARS = 32;

const environment = {
  UHP_ENV: z
    .enum(['development', 'production'], { message: 'must be development or production' })
    .default('development')
    .describe(
      'Where a service runs. `production` (the Helm chart sets it) refuses to start on a setting that only suits ' +
        'a laptop, one line per variable naming it and what to set (operations.md, "Production mode"); ' +
        '`development` (`npm start`, docker compose, the tests) keeps each such convenience and logs one warning ' +
        'per setting.',
    ),
};

/** Connection limits of every service's HTTP server: idle bodies, slow headers, idle keep-alive. */
const http = {
  UHP_IDLE_TIMEOUT_MS: integer(60_000, 1_000).describe(
    'No byte of a request body, or of a streaming response, for this long: the connection is closed (an upload ' +
      'is aborted with nothing kept). An idle limit, not a total one: a slow but moving transfer is never cut.',
  ),
  UHP_HEADERS_TIMEOUT_MS: integer(30_000, 1_000).describe("A request's headers must arrive within this long."),
  UHP_KEEP_ALIVE_TIMEOUT_MS: integer(65_000, 1_000).describe(
    'An idle keep-alive connection is closed after this long (above the usual 60 s of load balancers, so the ' +
      'balancer closes first).',
  ),
  SHUTDOWN_GRACE_MS: integer(25_000, 0, 600_000).describe(
    'On SIGTERM: readiness fails at once, no new connection is taken, and requests and jobs in flight get this ' +
      'long to finish (a job that does not is handed back to the queue) before the process closes.',
  ),
  METRICS_PORT: integer(0, 0, 65535)
    .meta(meta({ defaultText: '0: off' }))
    .describe(
      'When not 0, Prometheus metrics are also served on this port (`GET /metrics`), off the API port: the port ' +
        'to scrape.',
    ),
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

/** Gateway and storage read it and are given the same value. */
const maxFileBytes = {
  UHP_MAX_FILE_BYTES: integer(64 * GiB, 1, S3_MAX_OBJECT_BYTES).describe(
    'The largest file created any way: one request, inline, the Uploads API, tus, container files, agent ' +
      'artifacts. A resumable upload (`POST /v1/uploads` `bytes`, tus `Upload-Length`) may declare up to this ' +
      "(`max_upload_bytes` in `GET /v1/limits`); its parts are at most 64 MiB each. At most 5 TiB, S3's largest " +
      'object. Set the same value on the gateway and the storage service: there, with `ARCHIVE_MAX_BYTES`, it is ' +
      'the hard cap on any object. Replaces `UHP_MAX_UPLOAD_BYTES`.',
  ),
};

/**
 * Removed variables: set, they stop the start, since ignoring one would drop a limit its operator meant
 * to hold.
 */
const removedVariables = {
  UHP_MAX_UPLOAD_BYTES: z
    .undefined({
      message:
        'was removed: UHP_MAX_FILE_BYTES now caps every file, resumable uploads (/v1/uploads, /v1/tus) too; ' +
        'set that instead',
    })
    .optional()
    .meta(
      meta({
        type: 'removed',
        description:
          'Removed: it capped resumable uploads alone; `UHP_MAX_FILE_BYTES` now caps every file, resumable ' +
          'uploads (`/v1/uploads`, `/v1/tus`) too. A gateway or storage service with it set refuses to start, ' +
          'since ignoring it would drop a limit its operator meant to hold.',
      }),
    ),
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
  UHP_HEAP_GROWING_PERCENT: integer(100, 0, 1000).describe(
    'After a full garbage collection V8 lets the old generation grow to (1 + this/100) × the live heap before ' +
      'the next; 0 leaves V8\'s own heuristic. Why a fixed factor: operations.md, "V8\'s old-generation growth", ' +
      'and `libs/common/src/lifecycle/heap-growth.ts`.',
  ),
};

/** One Redis node or sentinel, as `host:port`. */
export interface RedisAddress {
  host: string;
  port: number;
}

/** A comma-separated `host:port` list; empty (the default) when unset. */
const redisAddresses = () =>
  z
    .string()
    .default('')
    .transform((value, context): RedisAddress[] => {
      const entries = value
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean);
      const addresses: RedisAddress[] = [];
      for (const entry of entries) {
        const address = parseRedisAddress(entry);
        if (address) addresses.push(address);
        else
          context.addIssue({
            code: 'custom',
            message: `must be a comma-separated list of host:port; not one: ${JSON.stringify(entry)}`,
          });
      }
      return addresses;
    })
    .meta(meta({ type: 'host:port list', defaultText: 'unset' }));

/** `host:port`, `[v6]:port`; undefined for anything else (a scheme, a path, no port). */
export function parseRedisAddress(entry: string): RedisAddress | undefined {
  if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):\d{1,5}$/.test(entry)) return undefined;
  const port = Number(entry.slice(entry.lastIndexOf(':') + 1));
  if (port < 1 || port > 65_535) return undefined;
  return { host: entry.slice(0, entry.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1'), port };
}

const database = {
  DATABASE_URL: url('postgresql://postgres@127.0.0.1:5432/uhp')
    .meta(meta({ secret: true }))
    .describe(
      'The Postgres database (it usually carries the password; the Helm chart keeps it in its Secret). The storage ' +
        'service keeps its journal of S3 multipart uploads there too (`s3_multipart_uploads`, with their parts, ' +
        'sizes and ETags).',
    ),
  DATABASE_POOL_SIZE: integer(10, 1, 200).describe('Postgres connections one process holds at most (its pool).'),
  DATABASE_CONNECT_TIMEOUT_MS: integer(10_000, 100, 600_000).describe(
    'To get a connection: from the pool when all are busy, or a new one opened to Postgres. A request that ' +
      'cannot have one in time is answered `503` with `Retry-After`.',
  ),
  DATABASE_STATEMENT_TIMEOUT_MS: integer(30_000, 0, 3_600_000).describe(
    "Longest a query may run (Postgres' `statement_timeout`, for every query); the client also gives up 2 s " +
      'after it, for a server that stopped answering altogether. 0: no limit. The operator CLIs (doctor, keys) ' +
      'run without one.',
  ),
  DATABASE_DIRECT_URL: optionalUrl()
    .meta(meta({ secret: true, defaultText: '`DATABASE_URL`' }))
    .describe(
      'A direct connection to the same Postgres, for when `DATABASE_URL` goes through a pooler in transaction ' +
        'pooling mode (PgBouncer): migrations (which hold a session advisory lock) and the operator CLIs use it. ' +
        'When it is set the services take `DATABASE_URL` to be such a pooler and send no session setting at ' +
        "connect (PgBouncer refuses `statement_timeout` there): the server-side bound is then the pooler's " +
        "`query_timeout` or the role's `statement_timeout`, and the client still gives up 2 s after " +
        '`DATABASE_STATEMENT_TIMEOUT_MS` (operations.md, "Highly available setups").',
    ),
};
/** A tool that reads only the database (the keys CLI). */
export const databaseConfigSchema = z.object(database);
const redis = {
  REDIS_URL: url('redis://127.0.0.1:6379').describe('Redis, for the job queues only: nothing else lives in Redis.'),
  REDIS_PASSWORD: optionalSecret().describe(
    "Redis's password when `REDIS_URL` carries none (a URL's own password wins). Kept apart so the URL can live " +
      'in plain configuration and the password in a secret (the Helm chart does this, with its Secret).',
  ),
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 characters of A-Za-z0-9_.-')
    .default('bull')
    .describe(
      'The prefix of every queue key in Redis (1-64 characters of `A-Za-z0-9_.-`): two installations sharing ' +
        'one Redis need different ones.',
    ),
  REDIS_SENTINELS: redisAddresses().describe(
    'Redis under Sentinel: the sentinels, as a comma-separated `host:port` list (`[::1]:26379` for IPv6). The ' +
      "services ask them for the primary of `REDIS_SENTINEL_MASTER` and follow a failover; the data nodes' " +
      'user, password, database and TLS still come from `REDIS_URL` (its host and port are not used) and ' +
      '`REDIS_PASSWORD`. Not with `REDIS_CLUSTER_NODES`.',
  ),
  REDIS_SENTINEL_MASTER: z
    .string()
    .min(1)
    .default('mymaster')
    .describe('The name the sentinels monitor the primary under (`sentinel monitor <name> …`).'),
  REDIS_SENTINEL_USERNAME: z.string().min(1).optional().describe("The sentinels' own ACL user, if they have one."),
  REDIS_SENTINEL_PASSWORD: optionalSecret().describe(
    "The sentinels' own password (`requirepass` in sentinel.conf), if they have one; the data nodes' is " +
      '`REDIS_PASSWORD`.',
  ),
  REDIS_SENTINEL_TLS: boolean(false).describe(
    "TLS to the sentinels, verified against Node's CAs and `NODE_EXTRA_CA_CERTS` (TLS to the data nodes is " +
      "`REDIS_URL`'s `rediss://`).",
  ),
  REDIS_CLUSTER_NODES: redisAddresses().describe(
    'A Redis Cluster: some of its nodes, as a comma-separated `host:port` list (the rest are found from them). ' +
      'User, password and TLS come from `REDIS_URL` (database 0 only: a cluster has no other) and `REDIS_PASSWORD`. ' +
      "The queue keys then start with `{REDIS_KEY_PREFIX}`: a hash tag, so that each queue's keys live on one " +
      'slot, as BullMQ needs. Not with `REDIS_SENTINELS`.',
  ),
  REDIS_COMMAND_TIMEOUT_MS: integer(5_000, 100, 600_000).describe(
    'Longest a Redis command (an enqueue, a queue count) may wait for its answer. A request that needs the ' +
      'queue (a preview, an archive) is then answered `503`, and Redis is marked down until it answers `PING` ' +
      'again (operations.md, "Dependencies: bounds and breakers").',
  ),
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
  })
  .describe(
    'Which web pages may call the public `/v1` routes from a browser (CORS, with preflight): `*` for any page ' +
      '(a page can only act with a key it holds, since keys are bearer tokens, never cookies), or a ' +
      'comma-separated list of exact origins (`https://app.example.com,http://127.0.0.1:3000`: scheme, host and ' +
      'port, lower case, no path or trailing slash), answered with `Vary: Origin`. ' +
      '`Access-Control-Allow-Credentials` is never sent. Anything else stops the start, naming the bad entries. ' +
      'The Helm value `gateway.corsOrigins`.',
  );

export const WORKER_QUEUE_NAMES = ['preview', 'archive', 'purge'] as const;
export type WorkerQueue = (typeof WORKER_QUEUE_NAMES)[number];
const storageClient = {
  STORAGE_URL: url('http://127.0.0.1:8081').describe(
    "The storage service's internal address, which the gateway and the workers call.",
  ),
  STORAGE_TOKEN: secret(DEV_STORAGE_TOKEN).describe(
    "The storage service's shared secret: set the same on every service. The default is a development value " +
      `anyone can read in the source: \`UHP_ENV=production\` refuses it, an unset token, or one shorter than ` +
      `${MIN_STORAGE_TOKEN_CHARS} characters.`,
  ),
  STORAGE_REQUEST_TIMEOUT_MS: integer(30_000, 1_000, 600_000).describe(
    'To connect to the storage service, and how long a call may go without its answer or without the service ' +
      "reading what is sent before the storage service's `/healthz` is asked: when that does not answer within " +
      'the same time either, the service is marked down and every call to it fails with `503` at once until it ' +
      "answers again. Calls whose storage side works on S3 (finishing an upload) wait for S3's own bound on top " +
      '(`S3_REQUEST_TIMEOUT_MS`).',
  ),
};
const s3RequestTimeout = {
  S3_REQUEST_TIMEOUT_MS: integer(30_000, 1_000, 600_000).describe(
    'How long S3 may keep silent: to connect, to send the first byte of its answer, or between two bytes while a ' +
      'body streams either way (there is no total limit: a large healthy transfer is never cut). A call that ' +
      'waits this long is answered `503` and marks S3 down: calls to it fail with `503` at once until ' +
      '`HeadBucket` answers again (operations.md, "Dependencies: bounds and breakers"). On the gateway and the ' +
      'worker it bounds their direct reads (`STORAGE_DIRECT_READS`).',
  ),
};

/** Set the same on worker, storage and gateway: each reads it for its own part. */
const archiveMaxBytes = {
  ARCHIVE_MAX_BYTES: integer(64 * GiB, 1).describe(
    "The largest session archive (ZIP) a build may write. The worker fails a larger session's build (its row " +
      "`failed`, the request answered `503`); the storage service's hard cap on a put is the larger of this and " +
      '`UHP_MAX_FILE_BYTES`; the gateway only advertises it (`archive.max_bytes` in `GET /v1/limits`). Set the ' +
      'same value on all three.',
  ),
};

const gatewaySettings = z.object({
  ...environment,
  ...http,
  ...runtime,
  ...database,
  ...redis,
  ...storageClient,
  STORAGE_DIRECT_READS: boolean(true).describe(
    'Downloads read their bytes straight from S3 through 5-minute URLs the storage service signs for one object ' +
      '(its credentials stay there): one Node hop instead of a relay through storage. The gateway then needs a ' +
      'route to `S3_ENDPOINT` (the Helm value `gateway.directReads`); false relays every read through the ' +
      'storage service.',
  ),
  ...s3RequestTimeout,
  LOG_LEVEL: logLevel,
  HOST: z.string().default('0.0.0.0').describe('The interface the public API listens on.'),
  PORT: integer(8080, 1, 65535).describe('The public API port.'),
  UHP_API_KEYS: z
    .string()
    .default('')
    .meta(meta({ type: 'string', secret: true }))
    .describe(
      '`name=key,…` (`alice=sk_…,bob=sk_…`): creates these principals and keys at start, idempotently; a revoked ' +
        'key stays revoked. For development and tests; operators use `npm run keys -- create|list|revoke`.',
    ),
  ...maxFileBytes,
  ...removedVariables,
  UHP_MAX_SINGLE_REQUEST_FILE_BYTES: integer(5 * GiB, 1, S3_MAX_OBJECT_BYTES).describe(
    'The largest file one request streams in: `POST /v1/files`, container file uploads, agent artifacts. In ' +
      'effect the smaller of this and `UHP_MAX_FILE_BYTES` (served as `max_file_bytes`). A body that large holds ' +
      'a connection and an upload slot from its first byte to its last, and a cut-off one starts over, where a ' +
      'resumable upload resumes: larger files take a resumable upload.',
  ),
  UHP_MAX_INLINE_FILE_BYTES: integer(20 * MiB, 1).describe(
    "The largest file inline in a response's input (a `data:` URL), decoded. In effect the smaller of this and " +
      '`UHP_MAX_FILE_BYTES` (served as `max_inline_file_bytes`).',
  ),
  UHP_MAX_REQUEST_BYTES: integer(0)
    .meta(meta({ defaultText: '0: derived' }))
    .describe(
      'The JSON body limit (served as `max_request_bytes`); 0 derives it: the base64 size of the inline limit in ' +
        'effect plus 64 KiB. A value below that floor refuses the start, naming the floor, rather than being raised: ' +
        'it would advertise an inline limit no request could reach.',
    ),
  UHP_PUBLIC_BASE_URL: optionalUrl()
    .meta(meta({ defaultText: 'unset: `http://127.0.0.1:$PORT`' }))
    .describe(
      "The gateway's URL as clients reach it: absolute URLs in answers (download URLs in citations) are made from " +
        'it, never from `Host` or `X-Forwarded-*`. Unset, development falls back to `http://127.0.0.1:$PORT` with ' +
        'a warning; `UHP_ENV=production` refuses it unset or a loopback address (`localhost`, `*.localhost`, ' +
        '`127.0.0.0/8`, `::1`, `0.0.0.0`).',
    ),
  PREVIEW_ENABLED: boolean(true).describe('false: previews answer `501 preview_unavailable`.'),
  PREVIEW_TIMEOUT_MS: integer(60_000, 1_000).describe(
    'How long a request waits for a conversion before a retryable `502 preview_failed`.',
  ),
  UHP_DRAIN_TIMEOUT_MS: integer(30_000, 0).describe(
    'How long a rejected body, or one no handler read, is still read and discarded so the client sees the ' +
      'answer (docs/api.md §1).',
  ),
  UHP_MAX_INPUT_FILES: integer(64, 1, 1000).describe('Input files (inline or by id) one response may carry.'),
  AGENT_DEFAULT: z
    .enum(['report', 'http'])
    .default('report')
    .describe('The agent of a response that names none (docs/api.md §4).'),
  AGENT_HTTP_URL: optionalUrl().describe(
    "The operator's agent service for agent `http` ([agents.md](agents.md)); unset: that agent is not offered " +
      'and a response asking for it is refused with `400`.',
  ),
  AGENT_HTTP_TOKEN: optionalSecret().describe('Sent to the agent service as `Authorization: Bearer …` when set.'),
  AGENT_CALLBACK_BASE_URL: optionalUrl()
    .meta(meta({ defaultText: '`UHP_PUBLIC_BASE_URL`' }))
    .describe(
      'The base URL the agent service uses to call back (input files, artifact uploads); an in-cluster address ' +
        'works.',
    ),
  AGENT_TIMEOUT_MS: integer(120_000, 1_000).describe(
    "Wall-clock limit of one response's agent run; its task token expires with it, and the request is never " +
      'held longer.',
  ),
  ARCHIVE_WAIT_MS: integer(10_000, 0, 120_000).describe(
    'How long `GET …/files/archive` waits for a build before it answers `202` with the progress; 0 answers at ' +
      'once.',
  ),
  JOB_WAIT_FALLBACK_MS: integer(1_500, 50, 3_600_000).describe(
    "A request waiting for a preview or an archive is woken by the job's completion event (BullMQ's event " +
      'stream in Redis); it also re-reads its row this often, so an event lost in a Redis blip delays the ' +
      'answer by at most this much and never hangs it.',
  ),
  UHP_MAX_CONCURRENT_UPLOADS: integer(8, 1, 10_000).describe(
    'Per principal, per gateway process: uploads streaming at once (`POST /v1/files` and container uploads). ' +
      'Over it: `429` with `Retry-After: 1`.',
  ),
  UHP_MAX_CONCURRENT_DOWNLOADS: integer(32, 1, 10_000).describe(
    'Per principal, per gateway process: downloads, previews and archives being served at once. Over it: `429` ' +
      'with `Retry-After: 1`.',
  ),
  UHP_MAX_RESPONSES_IN_FLIGHT: integer(8, 1, 10_000).describe(
    'Per principal, per gateway process: responses whose agent is running. Over it: `429` with `Retry-After: 1`.',
  ),
  UHP_MAX_PENDING_PREVIEWS: integer(16, 1, 100_000).describe(
    'Per principal, across the installation (counted in Postgres): previews queued or converting. Over it: ' +
      '`429` with `Retry-After`.',
  ),
  UHP_MAX_PENDING_UPLOADS: integer(64, 1, 100_000).describe(
    'Per principal, across the installation: resumable uploads (`/v1/uploads`, `/v1/tus`) not yet completed or ' +
      'ended, counted under a per-principal advisory lock so racing creates cannot pass it. Over it: `429` with ' +
      '`Retry-After: 30`.',
  ),
  UHP_MAX_PENDING_UPLOAD_BYTES: integer(0)
    .meta(meta({ defaultText: '0: derived' }))
    .describe(
      'Per principal, across the installation: bytes the parts of its pending resumable uploads may hold, parts ' +
        "being written included (admitted under the upload's row lock and a per-principal advisory lock, so " +
        'parallel parts cannot pass it). Over it: `429` with `Retry-After: 30`. 0 derives it: twice ' +
        '`UHP_MAX_FILE_BYTES` (one largest file, re-sent once), and at least 1 GiB. Otherwise at least ' +
        '`UHP_MAX_FILE_BYTES`: a smaller value refuses the start, since no upload of the largest file would fit.',
    ),
  UHP_MAX_ARCHIVE_BUILDS: integer(2, 1, 10_000).describe(
    'Per principal, across the installation (counted in Postgres): archive builds queued or running. Over it: ' +
      '`429` with `Retry-After`.',
  ),
  UHP_API_METRICS: boolean(false).describe(
    'true also serves `GET /metrics`, without a key, on the public API port. Off by default: anyone who reaches ' +
      'the API would read the metrics; scrape `METRICS_PORT` instead. `UHP_ENV=production` refuses true.',
  ),
  ...archiveMaxBytes,
  UHP_CORS_ORIGINS: corsOrigins,
});

const storageSettings = z.object({
  ...environment,
  ...http,
  ...runtime,
  ...storageClient,
  ...database,
  LOG_LEVEL: logLevel,
  HOST: z
    .string()
    .default('127.0.0.1')
    .describe('The interface the storage service listens on: bind it to a private one only, it must never be public.'),
  STORAGE_PORT: integer(8081, 1, 65535).describe("The storage service's port."),
  S3_ENDPOINT: url('http://127.0.0.1:7480').describe('The S3 server.'),
  S3_REGION: z.string().min(1).default('us-east-1').describe('The S3 region the requests are signed for.'),
  S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')
    .default('uhp-files')
    .describe('The bucket every object lives in.'),
  S3_ACCESS_KEY_ID: optionalSecret().describe(
    "Static S3 keys: set both (with `S3_SECRET_ACCESS_KEY`) or neither. Neither: the AWS SDK's default " +
      'credential chain (`AWS_*` variables, web identity such as EKS IRSA, EKS Pod Identity, ECS/EC2 instance ' +
      "roles, `~/.aws`), so a pod can get its access from its service account; GCS's S3 API takes HMAC keys " +
      'only. Only the storage service (and the doctor) holds them. `npm start` and the test stacks pass the ' +
      "local server's keys explicitly.",
  ),
  S3_SECRET_ACCESS_KEY: optionalSecret().describe('The other half of the static S3 keys (see `S3_ACCESS_KEY_ID`).'),
  S3_FORCE_PATH_STYLE: boolean(true).describe(
    'Address the bucket in the path (`endpoint/bucket/key`) rather than the host name (`bucket.endpoint/key`), ' +
      'as most self-hosted S3 servers need.',
  ),
  ...s3RequestTimeout,
  ...maxFileBytes,
  ...removedVariables,
  S3_PART_SIZE_BYTES: integer(16 * MiB, 5 * MiB, 5 * GiB).describe(
    "The size of a multipart upload's parts, raised automatically to a put's cap / 10,000 (S3 takes 10,000 " +
      'parts at most): 16 MiB parts hold caps up to 10,000 × 16 MiB (156.25 GiB), so the default ' +
      '`UHP_MAX_FILE_BYTES` keeps them.',
  ),
  S3_UPLOAD_QUEUE_SIZE: integer(4, 1, 32).describe('Parts in flight to S3 per upload.'),
  STORAGE_MEMORY_BUDGET_BYTES: integer(256 * MiB, 5 * MiB).describe(
    'Bytes all uploads of this process may hold in part buffers at once, allocated once and reused: an upload ' +
      "waits for a free buffer rather than allocate one, so memory stays near this plus the process's baseline " +
      "under any load (`npm run bench:memory` measures it). A resumable upload's part of 5 MiB or more is held " +
      'whole until its request has been read, in as many 16 MiB buffers as it may fill, taken together: four for ' +
      'a 64 MiB part, so four such parts stream at once with the default and the next waits. Buffers no upload ' +
      'has taken for 60 s are let go. A smaller budget makes concurrent large uploads take turns for buffers, so ' +
      'a host that sees few uploads at once can lower it.',
  ),
  S3_MAX_SOCKETS: integer(1024, 1, 65_536).describe(
    'Connections to S3 at most (each download and each part in flight holds one).',
  ),
  ...archiveMaxBytes,
  STORAGE_ABANDONED_UPLOAD_SECONDS: integer(6 * 3600, 1).describe(
    'A multipart upload with no part for this long was abandoned (by a crash, say) and is aborted by the sweep. ' +
      'Judged from its row, which every part touches: a slow upload is never aborted. The doctor uses the same ' +
      'horizon.',
  ),
  STORAGE_ORPHAN_UPLOAD_SECONDS: integer(300, 1).describe(
    'A multipart upload whose owner object is gone (failed, discarded) is aborted after this long without a part.',
  ),
  STORAGE_SWEEP_INTERVAL_MS: integer(10 * 60_000, 0).describe(
    'How often the storage service sweeps abandoned and orphaned multipart uploads; 0 turns the sweep off.',
  ),
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

/** Sentinel or Cluster, not both; a cluster has database 0 only. */
const oneRedisTopology = (
  config: { REDIS_URL: string; REDIS_SENTINELS: RedisAddress[]; REDIS_CLUSTER_NODES: RedisAddress[] },
  context: z.RefinementCtx,
) => {
  if (config.REDIS_SENTINELS.length > 0 && config.REDIS_CLUSTER_NODES.length > 0)
    context.addIssue({
      code: 'custom',
      path: ['REDIS_CLUSTER_NODES'],
      message: 'cannot be set with REDIS_SENTINELS: Redis is either under Sentinel or a Cluster',
    });
  const db = new URL(config.REDIS_URL).pathname.replace(/^\//, '');
  if (config.REDIS_CLUSTER_NODES.length > 0 && db !== '' && db !== '0')
    context.addIssue({
      code: 'custom',
      path: ['REDIS_URL'],
      message: `names database ${db}, but a Redis Cluster has database 0 only (REDIS_CLUSTER_NODES is set)`,
    });
};

export const gatewayConfigSchema = gatewaySettings
  .superRefine(oneRedisTopology)
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
  STORAGE_DIRECT_READS: boolean(false).describe(
    'Archive builds and previews read object bytes straight from S3 through URLs the storage service signs, as ' +
      "the gateway's downloads do. Off by default: the chart's worker egress policy lets a pool reach only the " +
      'storage service, Postgres and Redis; give the pool a route to `S3_ENDPOINT` before turning it on (the ' +
      'chart turns it on for its `archive` pool, which has no egress policy, and refuses it for a pool with ' +
      '`egress: true`).',
  ),
  LOG_LEVEL: logLevel,
  HOST: z.string().default('0.0.0.0').describe("The interface of the worker's port (health and metrics only)."),
  WORKER_PORT: integer(8082, 1, 65535).describe("The worker's port: health and metrics only."),
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
    .transform((names) => [...new Set(names)])
    .describe(
      `Which queues this worker consumes: any of ${WORKER_QUEUE_NAMES.join(', ')}, comma-separated. Run pools ` +
        'of `preview`, `archive` and `purge` workers to scale each on its own. Every worker reports the depth of ' +
        'every queue.',
    ),
  PURGE_CONCURRENCY: integer(4, 1, 64).describe('Purge jobs in parallel per worker process.'),
  SWEEP_INTERVAL_MS: integer(15_000, 1_000).describe(
    'How often the expiry and safety-net sweep runs (one scheduler across all workers).',
  ),
  STALE_UPLOAD_SECONDS: integer(24 * 3600, 60).describe(
    'An `UPLOADING` object older than this was left by a crashed gateway and is reclaimed. The doctor uses the ' +
      'same horizon.',
  ),
  LOST_PURGE_SECONDS: integer(60, 1).describe(
    'A `PURGING` object this long with no purge done gets its purge job again (its enqueue was lost: Redis down ' +
      'or restarted, say).',
  ),
  LOST_JOB_SECONDS: integer(60, 1).describe(
    'A preview or archive still waiting this long gets its job queued again by the sweep: Redis may have lost ' +
      'it (a failover to a replica it had not reached yet, a restart without persistence). A job that exists ' +
      'is left as it is (its id is derived from the row), so this only bounds how late a lost one starts.',
  ),
  JOB_LOCK_MS: integer(30_000, 1_000, 600_000).describe(
    'How long a job stays claimed by a worker that stopped renewing its claim (killed, or cut off from Redis) ' +
      'before another worker takes it over; the claim is renewed every half of this, and checked as often.',
  ),
  TOMBSTONE_RETENTION_SECONDS: integer(7 * 24 * 3600, 60).describe(
    'Rows of deleted files, containers and sessions are kept this long (list cursors anchor on them), then pruned.',
  ),
  PREVIEW_ENABLED: boolean(true).describe('false: this worker starts no converters and takes no preview jobs.'),
  PREVIEW_CONCURRENCY: integer(2, 1, 32).describe('Preview jobs in parallel per worker process.'),
  PREVIEW_OFFICE_POOL_SIZE: integer(2, 1, 16).describe(
    'Warm LibreOffice (soffice) processes per worker, ≈ 200–400 MB each; each converts one document at a time.',
  ),
  PREVIEW_OFFICE_MAX_CONVERSIONS: integer(200, 1).describe(
    'A LibreOffice process is replaced after this many conversions (it grows with use).',
  ),
  PREVIEW_CONVERSION_TIMEOUT_MS: integer(45_000, 1_000).describe(
    "Wall-clock limit of one conversion; past it the converter's whole process group is killed (SIGKILL) and " +
      'the job retried.',
  ),
  PREVIEW_OFFICE_MEMORY_BYTES: integer(3 * GiB, 256 * MiB).describe(
    'Address-space limit (`RLIMIT_AS`) of each LibreOffice process.',
  ),
  PREVIEW_WORK_DIR: z
    .string()
    .min(1)
    .optional()
    .meta(meta({ type: 'string', defaultText: '`$TMPDIR/uhp-previews-<pid>`' }))
    .describe(
      "The converters' private scratch space: profiles, sources and PDFs (removed per job), and the files " +
        'converters read (staged at start). For the `uid` mode of a root worker every directory above it must be ' +
        'searchable by other uids (as `/tmp` is), else the worker falls back to the `landlock` mode.',
    ),
  PREVIEW_ISOLATE_NETWORK: z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'required'], { message: 'must be true, false or required' })
    .transform((v): 'prefer' | 'require' | 'off' =>
      v === 'required' ? 'require' : v === 'true' || v === '1' || v === 'yes' ? 'prefer' : 'off',
    )
    .default('prefer')
    .meta(meta({ type: 'boolean or `required`', defaultText: '`true`' }))
    .describe(
      'Network isolation of the converters. true: the strongest that works here (a network namespace, else a ' +
        'seccomp filter with Landlock), and converters run without one, with a warning, where none works; ' +
        '`required`: converters are refused then (office, HTML, images and PDF unavailable); false: none (the ' +
        'deployment isolates the preview workers\' network itself). See operations.md, "Preview isolation".',
    ),
  PREVIEW_SANDBOX_UID: integer(64_000, 1_000, 2 ** 31 - 100).describe(
    'A root worker runs its converters as this uid and the next 19 (one per LibreOffice slot, Chromium, the ' +
      'tools, the start-up probe, the image renderer), gid equal, no passwd entry needed; keep the ranges of two ' +
      'root workers on one host apart.',
  ),
  PREVIEW_MAX_OFFICE_INPUT_BYTES: integer(100 * MiB, 1).describe(
    "Office documents above this are a permanent `too_large`, decided from the source's recorded size before it " +
      'is fetched.',
  ),
  PREVIEW_MAX_TEXT_INPUT_BYTES: integer(20 * MiB, 1).describe(
    'HTML, Markdown and text above this are a permanent `too_large`, decided before they are fetched: the text ' +
      'converter reads the file into memory, and the cap also holds on what it reads.',
  ),
  PREVIEW_MAX_IMAGE_INPUT_BYTES: integer(50 * MiB, 1).describe(
    'Image files above this are a permanent `too_large`, decided before they are fetched; the image renderer ' +
      'gets a copy whose size is checked first, and its decoded pixels have a cap of their own.',
  ),
  ARCHIVE_CONCURRENCY: integer(1, 1, 16).describe(
    'Archive builds in parallel per worker process; each holds one object stream in and one upload out.',
  ),
  ...archiveMaxBytes,
});

export const workerConfigSchema = workerSettings
  .superRefine(oneRedisTopology)
  .superRefine(refusedInProduction('worker'));

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
    // Redis only to report its topology, and only when the environment names one: the storage pods have none.
    ...redis,
    REDIS_URL: optionalUrl().describe(
      'Redis as the gateway and workers reach it; with it, or `REDIS_SENTINELS` or `REDIS_CLUSTER_NODES`, the ' +
        'doctor also reports the Redis topology it finds.',
    ),
    STALE_UPLOAD_SECONDS: workerSettings.shape.STALE_UPLOAD_SECONDS,
    DOCTOR_GRACE_SECONDS: integer(15 * 60).describe(
      'How long a state the services settle by themselves may last before the doctor reports it: a bucket object ' +
        'with no row, a `PURGING` object, a pending preview or archive, a response past its deadline.',
    ),
  })
  .superRefine(bothS3KeysOrNeither);
export type DoctorConfig = z.infer<typeof doctorConfigSchema>;
