import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';

/** The one Prisma client of a process, on the pg driver adapter (no native query engine). */
export class PrismaService extends PrismaClient {
  constructor(databaseUrl: string, poolSize = 10) {
    super({ adapter: new PrismaPg({ connectionString: databaseUrl, max: poolSize }) });
  }

  async ping(): Promise<void> {
    await this.$queryRaw`SELECT 1`;
  }
}

export type Tx = Parameters<Parameters<PrismaService['$transaction']>[0]>[0];
