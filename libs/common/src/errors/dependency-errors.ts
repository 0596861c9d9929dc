/**
 * Whether an error says a dependency (Postgres, Redis, the storage service) could not be reached or
 * dropped the connection: a retry later can succeed, so the client gets 503 with Retry-After, not 500.
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
];

export function isDependencyUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  const { code, kind, originalCode, message, cause } = error as {
    code?: unknown;
    kind?: unknown;
    originalCode?: unknown;
    message?: unknown;
    cause?: unknown;
  };
  if (typeof code === 'string' && (PRISMA_UNREACHABLE.has(code) || SOCKET_CODES.has(code))) return true;
  if (typeof kind === 'string' && ADAPTER_KINDS.has(kind)) return true;
  if (kind === 'postgres' && typeof code === 'string' && SQLSTATE_UNAVAILABLE.test(code)) return true;
  if (typeof originalCode === 'string' && SQLSTATE_UNAVAILABLE.test(originalCode)) return true;
  if (typeof message === 'string' && MESSAGES.some((pattern) => pattern.test(message))) return true;
  return isDependencyUnavailable(cause, depth + 1);
}
