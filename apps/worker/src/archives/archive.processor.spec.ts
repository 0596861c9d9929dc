import { describe, expect, it, vi } from 'vitest';
import { JOB } from '@app/contracts';
import { inMemoryPlatform, silentLogger } from '../../../../test/fakes/platform';
import { fakeJob, processorContext, runAttempts, workerConfig } from '../../../../test/fakes/worker';
import { ArchiveBuildService } from './archive-build.service';
import { ArchiveProcessor } from './archive.processor';

/** A building archive row in memory, and the processor whose builds are what the test says. */
function setUp() {
  const platform = inMemoryPlatform();
  const archiveId = platform.memory.uuid();
  const now = new Date();
  platform.memory.tables.archives.push({
    id: archiveId,
    principalId: platform.memory.uuid(),
    sessionId: platform.memory.uuid(),
    manifestHash: 'b'.repeat(64),
    status: 'building',
    filesTotal: 1,
    bytesTotal: 10n,
    filesDone: 0,
    bytesDone: 0n,
    objectId: null,
    error: null,
    createdAt: now,
    updatedAt: now,
  });
  const unused = null as never;
  const config = workerConfig();
  const builds = new ArchiveBuildService(platform.archives, unused, unused, unused, unused, config, silentLogger);
  const { context, counted } = processorContext(config);
  const processor = new ArchiveProcessor(builds, context);
  const job = fakeJob(JOB.buildArchive, { archiveId }, 3);
  const row = () => platform.memory.tables.archives.find((archive) => archive.id === archiveId)!;
  return { builds, processor, job, row, counted };
}

describe('ArchiveProcessor uses the give-up policy of QueueProcessor', () => {
  it('a failed build is retried, and the row is marked failed with the reason once the last attempt fails', async () => {
    const { builds, processor, job, row, counted } = setUp();
    const build = vi.spyOn(builds, 'build').mockImplementation(async () => {
      expect(row().status).toBe('building');
      throw new Error('the archive is larger than ARCHIVE_MAX_BYTES');
    });
    const result = await runAttempts(processor, job);
    expect(result.attempts).toEqual(['failed', 'failed', 'failed']);
    expect(build).toHaveBeenCalledTimes(3);
    expect(row()).toMatchObject({ status: 'failed', error: 'the archive is larger than ARCHIVE_MAX_BYTES' });
    expect(await counted()).toEqual({ 'build-archive failed': 3 });
  });

  it('a build that succeeds on a retry is counted by its outcome, and the row is not marked failed', async () => {
    const { builds, processor, job, row, counted } = setUp();
    vi.spyOn(builds, 'build').mockRejectedValueOnce(new Error('S3 timed out')).mockResolvedValueOnce('built');
    expect((await runAttempts(processor, job)).attempts).toEqual(['failed', 'completed']);
    expect(row().status).toBe('building');
    expect(await counted()).toEqual({ 'build-archive failed': 1, 'build-archive built': 1 });
  });
});
