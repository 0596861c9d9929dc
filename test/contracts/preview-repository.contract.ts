import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PreviewKey, PreviewRepository, PreviewSource } from '@app/db';
import { eachSubject, SHA, type SubjectFactory } from './subject';

const key = (): PreviewKey => ({ sha256: randomBytes(32).toString('hex'), format: 'pdf', version: 1 });
const source = (filename = 'deck.pptx'): PreviewSource => ({
  objectId: randomUUID(),
  filename,
  contentType: 'application/vnd.ms-powerpoint',
});
const PDF = { bytes: 9, sha256: SHA, converter: 'libreoffice' };

/** What PreviewsService and the preview worker rely on from PreviewRepository. */
export function previewRepositoryContract(subject: SubjectFactory<PreviewRepository>) {
  describe('PreviewRepository contract', () => {
    const current = eachSubject(subject);

    it('findOrCreate makes one PENDING row per principal and content, and returns it again after', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const content = key();
      const first = source();
      const row = await repo.findOrCreate(alice, content, first);
      expect(row).toMatchObject({
        ...content,
        status: 'PENDING',
        generation: 0,
        sourceObjectId: first.objectId,
        sourceFilename: first.filename,
        sourceContentType: first.contentType,
        objectId: null,
        bytes: null,
        pdfSha256: null,
        converter: null,
        errorCode: null,
        errorMessage: null,
        permanent: false,
        storageKey: null,
      });
      expect(await repo.findOrCreate(alice, content, source('other.pptx'))).toEqual(row);
      expect(await repo.find(alice, content)).toEqual(row);
      expect(await repo.findForOwner(alice, row.id)).toEqual(row);
      expect(await repo.find(alice, { ...content, version: 2 })).toBeNull();
      expect(await repo.find(bob, content)).toBeNull();
      expect(await repo.findForOwner(bob, row.id)).toBeNull();
      const theirs = await repo.findOrCreate(bob, content, source());
      expect(theirs.id).not.toBe(row.id);
    });

    it('countPending counts the PENDING rows of the principal only', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const a = await repo.findOrCreate(alice, key(), source());
      await repo.findOrCreate(alice, key(), source());
      await repo.findOrCreate(bob, key(), source());
      expect(await repo.countPending(alice)).toBe(2);
      await repo.markFailed(a.id, 0, { code: 'conversion_failed', message: 'bad file', permanent: true });
      expect(await repo.countPending(alice)).toBe(1);
      expect(await repo.countPending(seed.principal())).toBe(0);
    });

    it('markReady records the PDF of the generation asked, once, only while PENDING', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const pdf = await seed.readyObject(principal);
      const row = await repo.findOrCreate(principal, key(), source());
      expect(await repo.markReady(row.id, 1, { ...PDF, objectId: pdf.id })).toBe(false);
      expect(await repo.markReady(row.id, 0, { ...PDF, objectId: pdf.id })).toBe(true);
      expect(await repo.markReady(row.id, 0, { ...PDF, objectId: pdf.id })).toBe(false);
      expect(await repo.findForOwner(principal, row.id)).toMatchObject({
        status: 'READY',
        objectId: pdf.id,
        bytes: 9n,
        pdfSha256: SHA,
        converter: 'libreoffice',
        storageKey: pdf.storageKey,
      });
      await repo.markFailed(row.id, 0, { code: 'late', message: 'late', permanent: false });
      expect((await repo.findForOwner(principal, row.id))?.status).toBe('READY');
    });

    it('markFailed and retry: only a transient failure of the generation asked is retried, once', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const row = await repo.findOrCreate(principal, key(), source());
      await repo.markFailed(row.id, 1, { code: 'timeout', message: 'slow', permanent: false });
      expect((await repo.findForOwner(principal, row.id))?.status).toBe('PENDING');
      const long = 'x'.repeat(1500);
      await repo.markFailed(row.id, 0, { code: 'timeout', message: long, permanent: false });
      const failed = await repo.findForOwner(principal, row.id);
      expect(failed).toMatchObject({ status: 'FAILED', errorCode: 'timeout', permanent: false });
      expect(failed?.errorMessage).toBe(long.slice(0, 1000));

      const next = source('again.pptx');
      expect(await repo.retry(seed.principal(), row.id, 0, next)).toBeNull();
      expect(await repo.retry(principal, row.id, 1, next)).toMatchObject({ status: 'FAILED', generation: 0 });
      const retried = await repo.retry(principal, row.id, 0, next);
      expect(retried).toMatchObject({
        status: 'PENDING',
        generation: 1,
        sourceObjectId: next.objectId,
        sourceFilename: 'again.pptx',
        errorCode: null,
        errorMessage: null,
      });
      expect(await repo.retry(principal, row.id, 0, source())).toEqual(retried);

      await repo.markFailed(row.id, 1, { code: 'unsupported', message: 'no', permanent: true });
      expect(await repo.retry(principal, row.id, 1, next)).toMatchObject({ status: 'FAILED', permanent: true });
    });

    it('dropLost removes a READY row with that PDF once, for its principal only', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const pdf = await seed.readyObject(principal);
      const content = key();
      const row = await repo.findOrCreate(principal, content, source());
      expect(await repo.dropLost(principal, row.id, pdf.id)).toEqual([]);
      await repo.markReady(row.id, 0, { ...PDF, objectId: pdf.id });
      expect(await repo.dropLost(seed.principal(), row.id, pdf.id)).toEqual([]);
      expect(await repo.dropLost(principal, row.id, randomUUID())).toEqual([]);
      expect(await repo.dropLost(principal, row.id, pdf.id)).toEqual([pdf.id]);
      expect(await repo.dropLost(principal, row.id, pdf.id)).toEqual([]);
      expect(await repo.find(principal, content)).toBeNull();
    });
  });
}
