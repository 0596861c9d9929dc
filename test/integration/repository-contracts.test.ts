import { afterAll, describe } from 'vitest';
import {
  ArchiveRepository,
  ContainerFileRepository,
  ContainerRepository,
  ConverterStatusRepository,
  FileRepository,
  PreviewRepository,
  ResponseRepository,
  SessionRepository,
  PrismaTransactions,
  StoredObjectRepository,
} from '@app/db';
import { PrismaService } from '@app/db/prisma';
import { repositoryContracts } from '../contracts/contracts';
import { CONTRACT_CONVERTER_PREFIX } from '../contracts/converter-status-repository.contract';
import type { Repositories } from '../contracts/subject';
import { TEST_DATABASE_URL } from '../support/env';

const prisma = new PrismaService(TEST_DATABASE_URL, 4);
const repos: Repositories = {
  objects: new StoredObjectRepository(prisma),
  files: new FileRepository(prisma),
  sessions: new SessionRepository(prisma),
  containers: new ContainerRepository(prisma),
  containerFiles: new ContainerFileRepository(prisma),
  responses: new ResponseRepository(prisma),
  previews: new PreviewRepository(prisma),
  archives: new ArchiveRepository(prisma),
  converterStatus: new ConverterStatusRepository(prisma),
  transactions: new PrismaTransactions(prisma),
};

afterAll(() => prisma.$disconnect());

describe('Prisma repositories on Postgres', () => {
  // Rows stay (every test makes its own principals and ids), except converter states: that table is
  // global, and a converter found usable would show in any test's /v1/limits.
  repositoryContracts(async () => ({
    repos,
    cleanup: async () => {
      await prisma.converterStatus.deleteMany({ where: { name: { startsWith: CONTRACT_CONVERTER_PREFIX } } });
    },
  }));
});
