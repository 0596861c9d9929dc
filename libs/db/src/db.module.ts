import { Global, Inject, Injectable, Module, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG } from '@app/common/config/config.module';
import { PrismaService } from './prisma.service';
import { ArchiveRepository } from './repositories/archive.repository';
import { ContainerFileRepository } from './repositories/container-file.repository';
import { FileRepository } from './repositories/file.repository';
import { PreviewRepository } from './repositories/preview.repository';
import { PrincipalRepository } from './repositories/principal.repository';
import { ResponseRepository } from './repositories/response.repository';
import { SessionRepository } from './repositories/session.repository';
import { StoredObjectRepository } from './repositories/stored-object.repository';

@Injectable()
class PrismaLifecycle implements OnModuleDestroy {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}
  async onModuleDestroy() {
    await this.prisma.$disconnect();
  }
}

const repository = <T>(type: new (prisma: PrismaService) => T) => ({ provide: type, useFactory: (prisma: PrismaService) => new type(prisma), inject: [PrismaService] });

/** Postgres through Prisma, and the repositories over it, for any app whose config has DATABASE_URL. */
@Global()
@Module({
  providers: [
    {
      provide: PrismaService,
      useFactory: (config: { DATABASE_URL: string; DATABASE_POOL_SIZE: number }) => new PrismaService(config.DATABASE_URL, config.DATABASE_POOL_SIZE),
      inject: [APP_CONFIG],
    },
    PrismaLifecycle,
    repository(StoredObjectRepository),
    repository(PrincipalRepository),
    repository(FileRepository),
    repository(SessionRepository),
    repository(ContainerFileRepository),
    repository(ResponseRepository),
    repository(PreviewRepository),
    repository(ArchiveRepository),
  ],
  exports: [PrismaService, StoredObjectRepository, PrincipalRepository, FileRepository, SessionRepository, ContainerFileRepository, ResponseRepository, PreviewRepository, ArchiveRepository],
})
export class DbModule {}
