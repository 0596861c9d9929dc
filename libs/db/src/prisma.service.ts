import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient, type Prisma } from './generated/client';

/** The one Prisma client of a process, on the pg driver adapter (no native query engine). */
export class PrismaService extends PrismaClient {
  constructor(databaseUrl: string, poolSize = 10) {
    super({ adapter: new PrismaPg({ connectionString: databaseUrl, max: poolSize }) });
  }

  async ping(): Promise<void> {
    await this.$queryRaw`SELECT 1`;
  }
}

/** What a repository runs its queries on: the process's client, or the transaction of a unit of work. */
export type Db = Prisma.TransactionClient;
