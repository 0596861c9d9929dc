import { Global, Inject, Injectable, Module, type OnModuleDestroy, type Provider } from '@nestjs/common';
import { APP_CONFIG } from '@app/common/config/config.module';
import { ObjectStager } from './lifecycle/object-stager';
import { PrismaUnitOfWork, UnitOfWork } from './lifecycle/unit-of-work';
import { DatabaseHealth } from './database';
import { PrismaService } from './prisma.service';
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
import { S3MultipartRepository } from './repositories/s3-multipart.repository';
import { UploadRepository } from './repositories/upload.repository';

@Injectable()
class PrismaLifecycle implements OnModuleDestroy {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}
  async onModuleDestroy() {
    await this.prisma.$disconnect();
  }
}

/** A repository outside any unit of work: on the process's client. */
const repository = (type: new (db: PrismaService) => unknown): Provider => ({
  provide: type,
  useFactory: (prisma: PrismaService) => new type(prisma),
  inject: [PrismaService],
});

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

/** The process's one Prisma client, from its config's DATABASE_URL and pool size. */
const prismaProvider = {
  provide: PrismaService,
  useFactory: (config: { DATABASE_URL: string; DATABASE_POOL_SIZE: number }) =>
    new PrismaService(config.DATABASE_URL, config.DATABASE_POOL_SIZE),
  inject: [APP_CONFIG],
};

/**
 * Postgres through Prisma: the repositories, the object stager and the unit of work, for any app whose
 * config has DATABASE_URL. Needs the object store and the job bus (PlatformIoModule).
 */
@Global()
@Module({
  providers: [
    prismaProvider,
    PrismaLifecycle,
    DatabaseHealth,
    ...REPOSITORIES.map(repository),
    ObjectStager,
    { provide: UnitOfWork, useClass: PrismaUnitOfWork },
  ],
  exports: [DatabaseHealth, ...REPOSITORIES, ObjectStager, UnitOfWork],
})
export class DbModule {}

/**
 * The storage service's part of Postgres: the journal of the S3 multipart uploads it opens
 * (S3MultipartRepository) and the database's readiness. No object stager, no job bus: storage is below them.
 */
@Module({
  providers: [prismaProvider, PrismaLifecycle, DatabaseHealth, repository(S3MultipartRepository)],
  exports: [DatabaseHealth, S3MultipartRepository],
})
export class MultipartJournalModule {}
