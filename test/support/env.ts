/**
 * The test environment: its own database, bucket, Redis db and ports, so tests never touch dev data.
 * UHP_TEST_SLOT=n (default 0) shifts all of them, so two checkouts can run their tests side by side.
 */
const SLOT = Number(process.env.UHP_TEST_SLOT ?? 0);
const PORT_SHIFT = SLOT * 10_000;
/** A fixed test port, moved by the test slot. */
export const testPort = (port: number) => port + PORT_SHIFT;
export const TEST_DATABASE_URL =
  process.env.UHP_TEST_DATABASE_URL ?? `postgresql://postgres@127.0.0.1:5432/uhp_test${SLOT ? `_${SLOT}` : ''}`;
export const TEST_REDIS_URL = process.env.UHP_TEST_REDIS_URL ?? `redis://127.0.0.1:6379/${3 + 5 * SLOT}`;
/**
 * A queue namespace of its own (REDIS_KEY_PREFIX) in the slot's Redis database, for a test whose
 * stack must be the only one taking its jobs (e.g. workers with odd limits, or one that is stopped).
 */
export const ownQueues = (lane: string) => ({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `test-${lane}` });
export const TEST_BUCKET = process.env.UHP_TEST_BUCKET ?? `uhp-test${SLOT ? `-${SLOT}` : ''}`;
export const TEST_STORAGE_TOKEN = 'test-storage-token-0123456789';
/**
 * What one request may upload in tests (max_file_bytes). UHP_MAX_FILE_BYTES keeps its default, so the
 * resumable-upload tests can send files far larger than one request may.
 */
export const TEST_MAX_SINGLE_REQUEST_FILE_BYTES = 4 * 1024 * 1024;

export const S3 = {
  endpoint: process.env.S3_ENDPOINT ?? 'http://127.0.0.1:7480',
  region: process.env.S3_REGION ?? 'us-east-1',
  accessKeyId: process.env.S3_ACCESS_KEY_ID ?? 'uhp-dev-access',
  secretAccessKey: process.env.S3_SECRET_ACCESS_KEY ?? 'uhp-dev-secret-key-0123456789',
};

export const KEYS = { alice: 'sk_test_alice_0123456789', bob: 'sk_test_bob_0123456789' } as const;

/** The test agent service (test/support/test-agent.ts) of the stack at `portBase` listens here. */
export const agentPort = (portBase: number) => portBase + 5;
export const TEST_AGENT_SERVICE_TOKEN = 'test-agent-service-token';

/**
 * How the test stacks are laid out (UHP_E2E_TOPOLOGY, read by stackEnv and Stack, so a file that starts
 * a stack of its own follows it too):
 * - `single` (the default): one process of each service, straight to Postgres;
 * - `pgbouncer`: the same, every service's DATABASE_URL through a private PgBouncer in transaction pooling
 *   (test/ha/pgbouncer.sh, started by the e2e global setup); DATABASE_DIRECT_URL stays direct;
 * - `ha`: through PgBouncer too, and two replicas of each service behind a round-robin HAProxy
 *   (test/ha/replicas.sh) on the stack's ports.
 */
export type Topology = 'single' | 'pgbouncer' | 'ha';
export const TOPOLOGY: Topology = topologyOf(process.env.UHP_E2E_TOPOLOGY);
function topologyOf(value = 'single'): Topology {
  if (value === 'single' || value === 'pgbouncer' || value === 'ha') return value;
  throw new Error(`UHP_E2E_TOPOLOGY=${value}: expected single, pgbouncer or ha`);
}
/** The private PgBouncer of the `pgbouncer` and `ha` topologies. */
export const PGBOUNCER_PORT = testPort(16432);
const DIRECT_POSTGRES = '127.0.0.1:5432';

/**
 * A URL of the local Postgres as the services reach it in this topology: through PgBouncer, which forwards
 * every database name. Another server (a private one of the fault tier) is left alone.
 */
export function servicesDatabaseUrl(url: string): string {
  const parsed = new URL(url);
  if (TOPOLOGY === 'single' || parsed.host !== DIRECT_POSTGRES) return url;
  parsed.port = String(PGBOUNCER_PORT);
  return parsed.toString();
}

/** Environment for the three services of a test stack whose ports start at `portBase`. */
export function stackEnv(portBase: number, overrides: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PORT: String(portBase),
    STORAGE_PORT: String(portBase + 1),
    WORKER_PORT: String(portBase + 2),
    HOST: '127.0.0.1',
    STORAGE_URL: `http://127.0.0.1:${portBase + 1}`,
    STORAGE_TOKEN: TEST_STORAGE_TOKEN,
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    S3_ENDPOINT: S3.endpoint,
    S3_REGION: S3.region,
    S3_BUCKET: TEST_BUCKET,
    S3_ACCESS_KEY_ID: S3.accessKeyId,
    S3_SECRET_ACCESS_KEY: S3.secretAccessKey,
    UHP_API_KEYS: `alice=${KEYS.alice},bob=${KEYS.bob}`,
    UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(TEST_MAX_SINGLE_REQUEST_FILE_BYTES),
    UHP_MAX_INLINE_FILE_BYTES: String(1024 * 1024),
    UHP_PUBLIC_BASE_URL: `http://127.0.0.1:${portBase}`,
    // The contract's GET /metrics without a key on the API port (off by default), which the scope and fuzz
    // tests check.
    UHP_API_METRICS: 'true',
    UHP_DRAIN_TIMEOUT_MS: '10000',
    SWEEP_INTERVAL_MS: '2000',
    AGENT_HTTP_URL: `http://127.0.0.1:${agentPort(portBase)}/task`,
    AGENT_HTTP_TOKEN: TEST_AGENT_SERVICE_TOKEN,
    AGENT_TIMEOUT_MS: '8000',
    LOG_LEVEL: 'info',
    // Tests of many files share one database: per-principal queue limits would count each other's rows.
    // The tests of those limits set their own.
    UHP_MAX_ARCHIVE_BUILDS: '1000',
    UHP_MAX_PENDING_PREVIEWS: '1000',
    ...overrides,
  };
  const pooled = servicesDatabaseUrl(env.DATABASE_URL!);
  if (pooled === env.DATABASE_URL) return env;
  return { ...env, DATABASE_URL: pooled, DATABASE_DIRECT_URL: env.DATABASE_DIRECT_URL ?? env.DATABASE_URL };
}

/** The port base of the shared e2e stack started by the global setup. */
export const E2E_PORT_BASE = testPort(18080);
export const E2E_BASE_URL = `http://127.0.0.1:${E2E_PORT_BASE}`;
