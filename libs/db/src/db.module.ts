import { Global, Module } from '@nestjs/common';
import { DatabaseHealth } from './database';
import type { PrismaService } from './prisma.service';
import { PrismaLifecycle, prismaProvider, repository } from './prisma.providers';
import { ArchiveRepository } from './repositories/archive.repository';
import { ContainerFileRepository } from './repositories/container-file.repository';
import { ContainerRepository } from './repositories/container.repository';
import { ConverterStatusRepository } from './repositories/converter-status.repository';
import { FileRepository } from './repositories/file.repository';
import { MaintenanceRepository } from './repositories/maintenance.repository';
import { PreviewRepository } from './repositories/preview.repository';
import { PrincipalRepository } from './repositories/principal.repository';
import { ResponseRepository } from './repositories/response.repository';
import { SessionRepository } from './repositories/session.repository';
import { StoredObjectRepository } from './repositories/stored-object.repository';
import { UploadRepository } from './repositories/upload.repository';
import { PrismaTransactions, Transactions } from './transactions';

const REPOSITORIES: Array<new (db: PrismaService) => unknown> = [
  StoredObjectRepository,
  PrincipalRepository,
  FileRepository,
  SessionRepository,
  ContainerRepository,
  ContainerFileRepository,
  ResponseRepository,
  PreviewRepository,
  ConverterStatusRepository,
  ArchiveRepository,
  MaintenanceRepository,
  UploadRepository,
];

/** Postgres through Prisma: the repositories and transactions over them, for any app whose config has DATABASE_URL. */
@Global()
@Module({
  providers: [
    prismaProvider,
    PrismaLifecycle,
    DatabaseHealth,
    ...REPOSITORIES.map(repository),
    { provide: Transactions, useClass: PrismaTransactions },
  ],
  exports: [DatabaseHealth, ...REPOSITORIES, Transactions],
})
export class DbModule {}
