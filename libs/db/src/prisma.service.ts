import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient, type Prisma } from './generated/client';

/**
 * Every interactive transaction may wait this long to start (a pool waiting for a connection, or a
 * database still warming up while the pods start: Prisma's default wait is short enough that a gateway
 * starting beside a cold database exits at boot) and run this long.
 */
const TRANSACTION_TIMEOUTS = { maxWait: 10_000, timeout: 30_000 } as const;

/** The bounds of every call to Postgres (DATABASE_CONNECT_TIMEOUT_MS, DATABASE_STATEMENT_TIMEOUT_MS). */
export interface DatabaseTimeouts {
  /** To get a connection, from the pool or newly opened; 0: wait as long as it takes. */
  connectMs: number;
  /** Longest a statement may run; 0: no limit (the command-line tools, whose scans may be long). */
  statementMs: number;
  /**
   * The URL reaches Postgres through a pooler in transaction pooling mode (PgBouncer): no session setting may be
   * sent at connect (PgBouncer refuses `statement_timeout` there, and a server connection serves many clients),
   * so only the client-side bound is kept; the server-side one is the pooler's or the role's.
   */
  pooled?: boolean;
}

/**
 * A server that stopped answering altogether cannot cancel its own statement: the client gives up this long
 * after the server's statement_timeout would have.
 */
const CLIENT_QUERY_MARGIN_MS = 2_000;

/** The one Prisma client of a process, on the pg driver adapter (no native query engine). */
export class PrismaService extends PrismaClient {
  /** The connections Prisma runs on, shared with the few reads that stream rows past it (see poolOf). */
  readonly pool: Pool;

  constructor(databaseUrl: string, poolSize = 10, timeouts: DatabaseTimeouts = { connectMs: 10_000, statementMs: 0 }) {
    const pool = new Pool({
      connectionString: databaseUrl,
      max: poolSize,
      connectionTimeoutMillis: timeouts.connectMs,
      ...(timeouts.statementMs > 0 ? { query_timeout: timeouts.statementMs + CLIENT_QUERY_MARGIN_MS } : {}),
      ...(timeouts.statementMs > 0 && !timeouts.pooled ? { statement_timeout: timeouts.statementMs } : {}),
    });
    super({ adapter: new PrismaPg(pool, { disposeExternalPool: true }), transactionOptions: TRANSACTION_TIMEOUTS });
    this.pool = pool;
  }

  async ping(): Promise<void> {
    await this.$queryRaw`SELECT 1`;
  }
}

/** What a repository runs its queries on: the process's client, or the transaction of a unit of work. */
export type Db = Prisma.TransactionClient;

/**
 * The pg pool under the process's client, for a read that streams many rows: Prisma's raw queries build
 * several objects per row, so a long listing would keep garbage alive in proportion to its rows. Outside a
 * unit of work only.
 */
export function poolOf(db: Db): Pool {
  // Not `instanceof PrismaService`: Prisma's constructor returns an object of its own making.
  const pool = (db as Partial<PrismaService>).pool;
  if (!(pool instanceof Pool)) throw new Error('pooled reads run on the process client, not in a transaction');
  return pool;
}
