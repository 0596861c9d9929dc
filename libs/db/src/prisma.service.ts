import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient, type Prisma } from './generated/client';

/**
 * Every interactive transaction may wait this long to start (a pool waiting for a connection, or a
 * database still warming up while the pods start: Prisma's default wait is short enough that a gateway
 * starting beside a cold database exits at boot) and run this long.
 */
const TRANSACTION_TIMEOUTS = { maxWait: 10_000, timeout: 30_000 } as const;

/** The one Prisma client of a process, on the pg driver adapter (no native query engine). */
export class PrismaService extends PrismaClient {
  /** The connections Prisma runs on, shared with the few reads that stream rows past it (see poolOf). */
  readonly pool: Pool;

  constructor(databaseUrl: string, poolSize = 10) {
    const pool = new Pool({ connectionString: databaseUrl, max: poolSize });
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
