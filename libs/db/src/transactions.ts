import { Inject, Injectable } from '@nestjs/common';
import { PrismaService, type Db } from './prisma.service';
import { ArchiveRepository } from './repositories/archive.repository';
import { ContainerFileRepository } from './repositories/container-file.repository';
import { ContainerRepository } from './repositories/container.repository';
import { FileRepository } from './repositories/file.repository';
import { PreviewRepository } from './repositories/preview.repository';
import { ResponseRepository } from './repositories/response.repository';
import { SessionRepository } from './repositories/session.repository';
import { StoredObjectRepository } from './repositories/stored-object.repository';
import { UploadRepository } from './repositories/upload.repository';

/** The repositories bound to one transaction. */
export interface TransactionRepositories {
  files: FileRepository;
  sessions: SessionRepository;
  containers: ContainerRepository;
  containerFiles: ContainerFileRepository;
  responses: ResponseRepository;
  previews: PreviewRepository;
  archives: ArchiveRepository;
  uploads: UploadRepository;
  objects: StoredObjectRepository;
}

function repositoriesOf(tx: Db): TransactionRepositories {
  return {
    files: new FileRepository(tx),
    sessions: new SessionRepository(tx),
    containers: new ContainerRepository(tx),
    containerFiles: new ContainerFileRepository(tx),
    responses: new ResponseRepository(tx),
    previews: new PreviewRepository(tx),
    archives: new ArchiveRepository(tx),
    uploads: new UploadRepository(tx),
    objects: new StoredObjectRepository(tx),
  };
}

/** Runs a function in one transaction: it commits when the function resolves, rolls back when it throws. */
export abstract class Transactions {
  abstract run<T>(fn: (repositories: TransactionRepositories) => Promise<T>): Promise<T>;
}

/** Transactions of Postgres, through the process's Prisma client. */
@Injectable()
export class PrismaTransactions extends Transactions {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {
    super();
  }

  run<T>(fn: (repositories: TransactionRepositories) => Promise<T>): Promise<T> {
    return this.prisma.$transaction((tx) => fn(repositoriesOf(tx)));
  }
}
