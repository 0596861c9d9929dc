import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { JOB, JOBS } from '@app/contracts';
import { fileUpload, gatewayServices, readDownload } from '../../../../test/fakes/gateway';
import { USER_ORIGIN } from '../auth/task-scope';

const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';
const never = () => false;

async function world(config: Record<string, string> = {}, converters = ['libreoffice', 'chromium', 'image', 'pdf']) {
  const services = gatewayServices({ config: { PREVIEW_TIMEOUT_MS: '1000', ...config } });
  await services.platform.converterStatus.save(converters.map((name) => ({ name, available: true, reason: null })));
  const session = await services.sessions.create(ALICE, {});
  const containerId = session.currentContainerId!;
  const put = (filename: string, data: string) =>
    services.containerFiles.upload(ALICE, containerId, fileUpload(filename, data), USER_ORIGIN);
  return { ...services, containerId, put };
}

/** The queue announcing that the conversion job of a row's generation finished. */
const finish = (services: Awaited<ReturnType<typeof world>>, previewId: string, generation: number) =>
  services.jobEvents.finish(JOBS[JOB.convertPreview].jobId({ previewId, generation }));

/**
 * What a worker does with a queued conversion: a PDF is staged, the row turns READY in one unit of work,
 * and the job's completion is announced.
 */
async function convertQueued(services: Awaited<ReturnType<typeof world>>, pdf = '%PDF-1.7 converted') {
  for (const { previewId, generation } of services.platform.jobs.jobs(JOB.convertPreview)) {
    const row = services.platform.memory.tables.previews.find((preview) => preview.id === previewId);
    if (row?.status !== 'PENDING' || row.generation !== generation) continue; // done before, or gone
    const staged = await services.platform.stager.stage(row.principalId, Readable.from([Buffer.from(pdf)]), {
      maxBytes: 1 << 20,
    });
    await services.platform.uow.run(
      async (work) => {
        if (
          await work.previews.markReady(previewId, generation, {
            objectId: staged.id,
            bytes: staged.bytes,
            sha256: staged.sha256,
            converter: 'libreoffice',
          })
        )
          await work.adopt(staged);
      },
      { staged: [staged] },
    );
    finish(services, previewId, generation);
  }
}

describe('PreviewsService', () => {
  it('answers 501 when previews are off or no worker has the converter, before queueing anything', async () => {
    const off = await world({ PREVIEW_ENABLED: 'false' });
    const doc = await off.put('a.docx', 'doc');
    await expect(off.previews.preview(ALICE, off.containerId, doc.id, never)).rejects.toMatchObject({
      code: 'preview_unavailable',
    });
    const noOffice = await world({}, ['chromium']);
    const other = await noOffice.put('a.docx', 'doc');
    await expect(noOffice.previews.preview(ALICE, noOffice.containerId, other.id, never)).rejects.toMatchObject({
      code: 'preview_unavailable',
    });
    expect(noOffice.platform.jobs.added).toEqual([]);
  });

  it('serves a PDF as it is, inline, and refuses an unknown type for good (502, no retry)', async () => {
    const services = await world();
    const pdf = await services.put('paper.pdf', '%PDF-1.4 original');
    const download = await services.previews.preview(ALICE, services.containerId, pdf.id, never);
    expect(download).toMatchObject({ contentType: 'application/pdf', disposition: 'inline', filename: 'paper.pdf' });
    expect((await readDownload(download)).toString()).toBe('%PDF-1.4 original');
    const zip = await services.put('bundle.zip', 'PK');
    await expect(services.previews.preview(ALICE, services.containerId, zip.id, never)).rejects.toMatchObject({
      code: 'preview_failed',
      headers: { 'x-should-retry': 'false' },
    });
    expect(services.platform.jobs.added).toEqual([]);
  });

  it('converts identical content once: concurrent requests share one row and one job id, and all get the PDF', async () => {
    const services = await world();
    const first = await services.put('report.docx', 'same bytes');
    const twin = await services.put('copy.docx', 'same bytes');
    const requests = [first, twin, first].map((file) =>
      services.previews.preview(ALICE, services.containerId, file.id, never),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(new Set(services.platform.jobs.jobs(JOB.convertPreview).map((job) => job.previewId)).size).toBe(1);
    await convertQueued(services);
    const downloads = await Promise.all(requests);
    for (const download of downloads) expect((await readDownload(download)).toString()).toBe('%PDF-1.7 converted');
    expect(downloads.map((download) => download.filename)).toEqual(['report.pdf', 'copy.pdf', 'report.pdf']);
    expect(services.platform.memory.tables.previews).toHaveLength(1);
    expect(services.platform.memory.miscounted()).toEqual([]);
  });

  it('a READY preview whose PDF left the store: a retryable 502, the row and its reference go, the next request converts anew', async () => {
    const services = await world();
    const doc = await services.put('lost.docx', 'lost bytes');
    const first = services.previews.preview(ALICE, services.containerId, doc.id, never);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await convertQueued(services);
    await first;
    const [row] = services.platform.memory.tables.previews;
    const key = services.platform.memory.tables.objects.get(row!.objectId!)!.storageKey;
    await services.platform.store.delete(key);

    // Two requests read the READY row before either opens it: one drops it, neither drops anything else.
    const lost = await Promise.all(
      [1, 2].map(() => services.previews.preview(ALICE, services.containerId, doc.id, never)),
    );
    for (const download of lost)
      await expect(readDownload(download)).rejects.toMatchObject({
        code: 'preview_failed',
        headers: {},
        message: expect.stringContaining('missing from storage'),
      });
    expect(services.platform.memory.tables.previews).toEqual([]);
    expect(services.platform.jobs.purged).toEqual([row!.objectId]);

    const again = services.previews.preview(ALICE, services.containerId, doc.id, never);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await convertQueued(services, '%PDF-1.7 converted again');
    expect((await readDownload(await again)).toString()).toBe('%PDF-1.7 converted again');
    expect(services.platform.jobs.jobs(JOB.convertPreview)).toHaveLength(2);
    expect(services.platform.memory.miscounted()).toEqual([]);
  });

  it('a permanent failure is 502 without retry; a transient one is tried again as a new generation', async () => {
    const services = await world();
    const doc = await services.put('broken.docx', 'broken');
    const waiting = services.previews.preview(ALICE, services.containerId, doc.id, never);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const row = services.platform.memory.tables.previews[0];
    await services.platform.previews.markFailed(row.id, 0, {
      code: 'timeout',
      message: 'took too long',
      permanent: false,
    });
    finish(services, row.id, 0);
    await expect(waiting).rejects.toMatchObject({ code: 'preview_failed', headers: {} });
    const again = services.previews.preview(ALICE, services.containerId, doc.id, never);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(services.platform.jobs.jobs(JOB.convertPreview).map((job) => job.generation)).toEqual([0, 1]);
    await services.platform.previews.markFailed(row.id, 1, {
      code: 'corrupt_document',
      message: 'not a document',
      permanent: true,
    });
    finish(services, row.id, 1);
    await expect(again).rejects.toMatchObject({ code: 'preview_failed', headers: { 'x-should-retry': 'false' } });
    await expect(services.previews.preview(ALICE, services.containerId, doc.id, never)).rejects.toMatchObject({
      message: expect.stringContaining('corrupt_document'),
    });
    expect(services.platform.jobs.jobs(JOB.convertPreview)).toHaveLength(2);
  });

  it('stops waiting when the conversion outlasts the timeout or the client goes away, with a retryable 502', async () => {
    const services = await world({ PREVIEW_TIMEOUT_MS: '1000' });
    const doc = await services.put('slow.docx', 'slow');
    let gone = false;
    const waiting = services.previews.preview(ALICE, services.containerId, doc.id, () => gone);
    gone = true;
    await expect(waiting).rejects.toMatchObject({ code: 'preview_failed', headers: {} });
    await expect(services.previews.preview(BOB, services.containerId, doc.id, never)).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it("refuses a principal's conversion past its pending limit with 429, and queues each principal's first one first", async () => {
    const services = await world({ UHP_MAX_PENDING_PREVIEWS: '2', PREVIEW_TIMEOUT_MS: '1000' });
    let gone = false;
    const isGone = () => gone;
    const waiting = [];
    for (const name of ['one.docx', 'two.docx'])
      waiting.push(
        services.previews
          .preview(ALICE, services.containerId, (await services.put(name, name)).id, isGone)
          .catch(() => null),
      );
    await new Promise((resolve) => setTimeout(resolve, 30));
    const third = await services.put('three.docx', 'three');
    await expect(services.previews.preview(ALICE, services.containerId, third.id, never)).rejects.toMatchObject({
      code: 'rate_limited',
      headers: { 'retry-after': '5' },
    });
    const bobSession = await services.sessions.create(BOB, {});
    const bobFile = await services.containerFiles.upload(
      BOB,
      bobSession.currentContainerId!,
      fileUpload('b.docx', 'bob'),
      USER_ORIGIN,
    );
    waiting.push(services.previews.preview(BOB, bobSession.currentContainerId!, bobFile.id, isGone).catch(() => null));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(services.platform.jobs.added.map((job) => job.priority)).toEqual([1, 2, 1]);
    gone = true;
    await Promise.all(waiting);
  });
});
