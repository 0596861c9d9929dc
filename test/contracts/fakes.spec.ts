import { describe } from 'vitest';
import { Memory } from '../fakes/memory';
import {
  MemoryArchives,
  MemoryContainerFiles,
  MemoryContainers,
  MemoryConverterStatus,
  MemoryFiles,
  MemoryPreviews,
  MemoryResponses,
  MemorySessions,
  MemoryStoredObjects,
} from '../fakes/repositories';
import { repositoryContracts } from './contracts';
import type { Repositories } from './subject';

/** The fakes the service specs build on, held to the contracts the Prisma repositories pass. */
export function memoryRepositories(memory = new Memory()): Repositories {
  return {
    objects: new MemoryStoredObjects(memory),
    files: new MemoryFiles(memory),
    sessions: new MemorySessions(memory),
    containers: new MemoryContainers(memory),
    containerFiles: new MemoryContainerFiles(memory),
    responses: new MemoryResponses(memory),
    previews: new MemoryPreviews(memory),
    archives: new MemoryArchives(memory),
    converterStatus: new MemoryConverterStatus(memory),
  };
}

describe('in-memory repositories (test/fakes)', () => {
  repositoryContracts(async () => ({ repos: memoryRepositories(), cleanup: async () => undefined }));
});
