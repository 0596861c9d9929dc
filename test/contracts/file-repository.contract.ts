import { describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import type { FileRepository } from '@app/db';
import { eachSubject, type SubjectFactory } from './subject';

/**
 * A moment before any file of an earlier run of this contract expired: expireDue sweeps the whole table up
 * to `now`, so each run sweeps a past of its own that leftovers of earlier runs (later dates) never fall in.
 */
const sweepBase = () => new Date(Date.UTC(2000, 0, 1) - Date.now());

/** What FilesService and the expiry sweep rely on from FileRepository. */
export function fileRepositoryContract(subject: SubjectFactory<FileRepository>) {
  describe('FileRepository contract', () => {
    const current = eachSubject(subject);

    it('create returns the row with its object key; a file with no hash yet is "uploaded"', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const object = await seed.readyObject(principal);
      const id = newId('file');
      const createdAt = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6));
      const row = await repo.create(principal, {
        id,
        objectId: object.id,
        filename: 'a.csv',
        bytes: 3,
        contentType: 'text/csv',
        sha256: null,
        purpose: 'assistants',
        createdAt,
        expiresAt: null,
      });
      expect(row).toMatchObject({
        id,
        objectId: object.id,
        filename: 'a.csv',
        bytes: 3n,
        contentType: 'text/csv',
        sha256: null,
        status: 'uploaded',
        purpose: 'assistants',
        createdAt,
        expiresAt: null,
        storageKey: object.storageKey,
      });
      expect(typeof row.seq).toBe('bigint');
      expect((await seed.file(principal)).status).toBe('processed');
      expect(await repo.findForOwner(principal, id)).toEqual(row);
    });

    it('a file is seen by its principal only, and not once expired or deleted', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const file = await seed.file(alice);
      expect((await repo.findForOwner(alice, file.id))?.id).toBe(file.id);
      expect(await repo.findForOwner(bob, file.id)).toBeNull();
      expect(await repo.lockLive(bob, file.id)).toBeNull();
      expect((await repo.lockLive(alice, file.id))?.id).toBe(file.id);
      expect((await repo.listForOwner(bob, { limit: 10, order: 'desc' })).items).toEqual([]);

      const expired = await seed.file(alice, { expiresAt: new Date(Date.now() - 60_000) });
      expect(await repo.findForOwner(alice, expired.id)).toBeNull();
      expect(await repo.lockLive(alice, expired.id)).toBeNull();
      expect(await repo.markDeleted(alice, expired.id)).toBeNull();
      const future = await seed.file(alice, { expiresAt: new Date(Date.now() + 3_600_000) });
      expect((await repo.findForOwner(alice, future.id))?.id).toBe(future.id);

      const listed = await repo.listForOwner(alice, { limit: 10, order: 'asc' });
      expect(listed.items.map((row) => row.id)).toEqual([file.id, future.id]);
    });

    it('markDeleted turns a live file once, only for its principal, and hands back its object', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const file = await seed.file(alice);
      expect(await repo.markDeleted(bob, file.id)).toBeNull();
      expect(await repo.markDeleted(alice, file.id)).toBe(file.objectId);
      expect(await repo.markDeleted(alice, file.id)).toBeNull();
      expect(await repo.findForOwner(alice, file.id)).toBeNull();
      expect(await repo.lockLive(alice, file.id)).toBeNull();
      expect((await repo.listForOwner(alice, { limit: 10, order: 'asc' })).items).toEqual([]);
    });

    it('cursorSeq knows the files of the principal, deleted ones too, and nobody else', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const file = await seed.file(alice);
      await repo.markDeleted(alice, file.id);
      expect(await repo.cursorSeq(alice, file.id)).toBe(file.seq);
      expect(await repo.cursorSeq(bob, file.id)).toBeNull();
      expect(await repo.cursorSeq(alice, newId('file'))).toBeNull();
    });

    it('lists by seq in either order, a page after a cursor, with has_more and a purpose filter', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const made = [];
      for (const purpose of ['user_data', 'assistants', 'user_data', 'user_data'] as const)
        made.push(await seed.file(principal, { purpose }));
      const ids = made.map((file) => file.id);
      const asc = await repo.listForOwner(principal, { limit: 2, order: 'asc' });
      expect(asc).toMatchObject({ hasMore: true });
      expect(asc.items.map((row) => row.id)).toEqual(ids.slice(0, 2));
      const next = await repo.listForOwner(principal, { limit: 2, order: 'asc', afterSeq: asc.items[1].seq });
      expect(next.items.map((row) => row.id)).toEqual(ids.slice(2));
      expect(next.hasMore).toBe(false);
      const desc = await repo.listForOwner(principal, { limit: 3, order: 'desc', afterSeq: made[3].seq });
      expect(desc.items.map((row) => row.id)).toEqual([ids[2], ids[1], ids[0]]);
      expect(desc.hasMore).toBe(false);
      const userData = await repo.listForOwner(principal, { limit: 10, order: 'desc', purpose: 'user_data' });
      expect(userData.items.map((row) => row.id)).toEqual([ids[3], ids[2], ids[0]]);
      const exact = await repo.listForOwner(principal, { limit: 4, order: 'asc' });
      expect(exact.hasMore).toBe(false);
    });

    it('expireDue marks due files deleted, the earliest expiry first, each once', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const base = sweepBase();
      const at = (ms: number) => new Date(base.getTime() - ms);
      const later = await seed.file(principal, { expiresAt: at(1_000) });
      const earliest = await seed.file(principal, { expiresAt: at(3_000) });
      const middle = await seed.file(principal, { expiresAt: at(2_000) });
      const notYet = await seed.file(principal, { expiresAt: new Date(Date.now() + 3_600_000) });

      expect(await repo.expireDue(base, 2)).toEqual([earliest.objectId, middle.objectId]);
      expect(await repo.expireDue(base, 2)).toEqual([later.objectId]);
      expect(await repo.expireDue(base, 2)).toEqual([]);
      expect(await repo.cursorSeq(principal, later.id)).toBe(later.seq);
      expect((await repo.findForOwner(principal, notYet.id))?.id).toBe(notYet.id);
    });
  });
}
