import { Inject, Injectable, type OnModuleDestroy, type Provider } from '@nestjs/common';
import { APP_CONFIG } from '@app/common';
import { PrismaService } from './prisma.service';

/** Closes the process's Prisma client when the app shuts down. */
@Injectable()
export class PrismaLifecycle implements OnModuleDestroy {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}
  async onModuleDestroy() {
    await this.prisma.$disconnect();
  }
}

/** A repository outside any unit of work: on the process's client. */
export const repository = (type: new (db: PrismaService) => unknown): Provider => ({
  provide: type,
  useFactory: (prisma: PrismaService) => new type(prisma),
  inject: [PrismaService],
});

/** The process's one Prisma client, from its config's DATABASE_URL and pool size. */
export const prismaProvider = {
  provide: PrismaService,
  useFactory: (config: {
    DATABASE_URL: string;
    DATABASE_POOL_SIZE: number;
    DATABASE_CONNECT_TIMEOUT_MS: number;
    DATABASE_STATEMENT_TIMEOUT_MS: number;
    DATABASE_DIRECT_URL?: string;
  }) =>
    new PrismaService(config.DATABASE_URL, config.DATABASE_POOL_SIZE, {
      connectMs: config.DATABASE_CONNECT_TIMEOUT_MS,
      statementMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
      pooled: config.DATABASE_DIRECT_URL !== undefined,
    }),
  inject: [APP_CONFIG],
};
