import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { PrincipalRepository } from '@app/db';
import { PrismaService } from '@app/db/prisma';
import { TEST_DATABASE_URL } from '../support/env';

// One connection: a second transaction must wait for the first to give it back.
const prisma = new PrismaService(TEST_DATABASE_URL, 1);
afterAll(() => prisma.$disconnect());

describe('transactions on a busy pool', () => {
  it('wait longer than Prisma’s 2 s for a connection: a key ensured at boot behind a slow transaction still lands', async () => {
    const holding = prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1`;
      await sleep(3_000);
    });
    await sleep(100);
    const name = `busy-pool-${randomUUID()}`;
    const principal = await new PrincipalRepository(prisma).ensureKey(name, randomUUID(), 'sk-busy', null, 'bootstrap');
    await holding;
    expect(principal.name).toBe(name);
  });
});
