import { Inject, Injectable } from '@nestjs/common';
import { PrismaService } from './prisma.service';
import { ConsistencyRepository } from './repositories/consistency.repository';
import { PrincipalRepository } from './repositories/principal.repository';
import { StoredObjectRepository } from './repositories/stored-object.repository';

/** Readiness of Postgres, for /readyz: the apps ask this, never the client itself. */
@Injectable()
export class DatabaseHealth {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  ping(): Promise<void> {
    return this.prisma.ping();
  }
}

/** The principals and keys of a database, for a command-line tool outside the services; close it when done. */
export function openPrincipals(databaseUrl: string): { principals: PrincipalRepository; close(): Promise<void> } {
  const prisma = new PrismaService(databaseUrl, 1);
  return { principals: new PrincipalRepository(prisma), close: () => prisma.$disconnect() };
}

/** What the consistency checker reads and repairs, for a command-line tool; close it when done. */
export function openConsistency(databaseUrl: string): {
  consistency: ConsistencyRepository;
  objects: StoredObjectRepository;
  close(): Promise<void>;
} {
  const prisma = new PrismaService(databaseUrl, 2);
  return {
    consistency: new ConsistencyRepository(prisma),
    objects: new StoredObjectRepository(prisma),
    close: () => prisma.$disconnect(),
  };
}
