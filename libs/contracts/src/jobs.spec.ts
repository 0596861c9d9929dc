import { describe, expect, it } from 'vitest';
import { InvalidJobError, isJobOf, JOB, JOB_NAMES_BY_QUEUE, JOBS, parseJobPayload, QUEUE } from './jobs';

const uuid = '7d0f4d6e-3a2b-4c1d-9e8f-0a1b2c3d4e5f';

describe('the job contract', () => {
  it('gives every job exactly one queue, the one that lists it', () => {
    for (const [queue, names] of Object.entries(JOB_NAMES_BY_QUEUE))
      for (const name of names) expect(JOBS[name].queue).toBe(queue);
    const listed = Object.values(JOB_NAMES_BY_QUEUE).flat();
    expect(listed.sort()).toEqual(Object.values(JOB).sort());
  });

  it('makes deterministic job ids without the ":" BullMQ refuses', () => {
    const ids = [
      JOBS[JOB.purgeObject].jobId({ objectId: uuid }),
      JOBS[JOB.convertPreview].jobId({ previewId: uuid, generation: 2 }),
      JOBS[JOB.buildArchive].jobId({ archiveId: uuid }),
      JOBS[JOB.sweep].jobId({}),
    ];
    for (const id of ids) expect(id).not.toContain(':');
    expect(JOBS[JOB.convertPreview].jobId({ previewId: uuid, generation: 2 })).not.toBe(
      JOBS[JOB.convertPreview].jobId({ previewId: uuid, generation: 3 }),
    );
    expect(JOBS[JOB.purgeObject].jobId({ objectId: uuid, requestId: 'a' })).toBe(
      JOBS[JOB.purgeObject].jobId({ objectId: uuid, requestId: 'b' }),
    );
  });

  it('checks a payload taken from Redis against its schema', () => {
    expect(parseJobPayload(JOB.convertPreview, { previewId: uuid, generation: 0, requestId: 'req-1' })).toEqual({
      previewId: uuid,
      generation: 0,
      requestId: 'req-1',
    });
    expect(() => parseJobPayload(JOB.convertPreview, { previewId: uuid })).toThrow(InvalidJobError);
    expect(() => parseJobPayload(JOB.purgeObject, { objectId: '../etc/passwd' })).toThrow(/objectId/);
    expect(() => parseJobPayload(JOB.buildArchive, null)).toThrow(InvalidJobError);
  });

  it('knows which names belong to a queue', () => {
    expect(isJobOf(QUEUE.purge, JOB.sweep)).toBe(true);
    expect(isJobOf(QUEUE.purge, JOB.buildArchive)).toBe(false);
    expect(isJobOf(QUEUE.preview, 'convert-everything')).toBe(false);
  });
});
