/**
 * Whether an error says a dependency (Postgres, Redis, the storage service, S3) could not be reached, dropped
 * the connection or did not answer within its bound: a retry later can succeed, so the client gets 503 with
 * Retry-After, not 500.
 */
const PRISMA_UNREACHABLE = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** SQLSTATE: connection exceptions (08…), shutdowns (57P01–57P03), too many connections (53300). */
const SQLSTATE_UNAVAILABLE = /^(08...|57P0[123]|53300)$/;
const MESSAGES = [
  /Connection terminated/i,
  /Can't reach database server/i,
  /terminating connection due to administrator command/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
  /Connection is closed/i, // ioredis
  /enableOfflineQueue options is false/i, // ioredis, while reconnecting
  /Timed out fetching a new connection from the connection pool/i,
  /timeout exceeded when trying to connect/i, // pg, DATABASE_CONNECT_TIMEOUT_MS
  /Query read timeout/i, // pg, a server silent past DATABASE_STATEMENT_TIMEOUT_MS
  /canceling statement due to statement timeout/i,
  /Command timed out/i, // ioredis
];
/** Errors of a call that waited out its bound (the AWS SDK's socket timeouts, undici's, ours). */
const TIMEOUT_NAMES = new Set(['TimeoutError', 'DependencyTimeoutError']);
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'DEPENDENCY_TIMEOUT', '57014']);

export function isDependencyUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  const { name, code, kind, originalCode, message, cause, meta } = error as {
    name?: unknown;
    code?: unknown;
    kind?: unknown;
    originalCode?: unknown;
    message?: unknown;
    cause?: unknown;
    meta?: { driverAdapterError?: unknown };
  };
  if (typeof name === 'string' && TIMEOUT_NAMES.has(name)) return true;
  if (typeof code === 'string' && (PRISMA_UNREACHABLE.has(code) || SOCKET_CODES.has(code))) return true;
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return true;
  // Prisma's raw queries (P2010) carry the driver adapter's error beside, not as the cause.
  if (meta?.driverAdapterError && isDependencyUnavailable(meta.driverAdapterError, depth + 1)) return true;
  if (typeof kind === 'string' && ADAPTER_KINDS.has(kind)) return true;
  if (kind === 'postgres' && typeof code === 'string' && SQLSTATE_UNAVAILABLE.test(code)) return true;
  if (typeof originalCode === 'string' && SQLSTATE_UNAVAILABLE.test(originalCode)) return true;
  if (typeof message === 'string' && MESSAGES.some((pattern) => pattern.test(message))) return true;
  return isDependencyUnavailable(cause, depth + 1);
}
