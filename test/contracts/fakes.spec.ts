import { describe, expect, it } from 'vitest';
import { Memory } from '../fakes/memory';
import { MemoryTransactions, memoryRepositories } from '../fakes/platform';
import * as fakes from '../fakes/repositories';
import { repositoryContracts } from './contracts';
import type { Repositories } from './subject';

/** The fakes the service specs build on, held to the contracts the Prisma repositories pass. */
function allFakes(memory = new Memory()): Repositories {
  return {
    ...memoryRepositories(memory),
    converterStatus: new fakes.MemoryConverterStatus(memory),
    transactions: new MemoryTransactions(memory),
  };
}

describe('in-memory repositories (test/fakes)', () => {
  it('every fake repository is held to a contract', () => {
    const covered = Object.values(allFakes()).map((repo) => repo.constructor);
    const faked = Object.values(fakes).filter(
      (value) => typeof value === 'function' && value.name.startsWith('Memory'),
    );
    expect(faked.filter((fake) => !covered.includes(fake)).map((fake) => fake.name)).toEqual([]);
  });

  repositoryContracts(async () => ({ repos: allFakes(), cleanup: async () => undefined }));
});
