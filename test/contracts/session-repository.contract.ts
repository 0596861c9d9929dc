import { describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import type { SessionRepository } from '@app/db';
import { eachSubject, type SubjectFactory } from './subject';

/** What SessionsService and the services under a session rely on from SessionRepository. */
export function sessionRepositoryContract(subject: SubjectFactory<SessionRepository>) {
  describe('SessionRepository contract', () => {
    const current = eachSubject(subject);

    it('create returns the row; only its principal finds, locks or lists it', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const id = newId('session');
      const containerId = newId('container');
      const row = await repo.create(alice, { id, currentContainerId: containerId, metadata: { topic: 'q3' } });
      expect(row).toMatchObject({ id, currentContainerId: containerId, metadata: { topic: 'q3' } });
      expect(typeof row.seq).toBe('bigint');
      expect(row.createdAt).toBeInstanceOf(Date);
      expect(await repo.findForOwner(alice, id)).toEqual(row);
      expect(await repo.lockLive(alice, id, 'share')).toEqual(row);
      expect(await repo.lockLive(alice, id, 'exclusive')).toEqual(row);
      expect(await repo.findForOwner(bob, id)).toBeNull();
      expect(await repo.lockLive(bob, id, 'exclusive')).toBeNull();
      expect(await repo.cursorSeq(bob, id)).toBeNull();
      expect((await repo.listForOwner(bob, { limit: 10, order: 'asc' })).items).toEqual([]);
      expect((await repo.listForOwner(alice, { limit: 10, order: 'asc' })).items).toEqual([row]);
    });

    it('markDeleted turns a live session once, for its principal only, and forgets its container', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const { sessionId } = await seed.session(alice);
      expect(await repo.markDeleted(bob, sessionId)).toBe(false);
      expect(await repo.markDeleted(alice, sessionId)).toBe(true);
      expect(await repo.markDeleted(alice, sessionId)).toBe(false);
      expect(await repo.findForOwner(alice, sessionId)).toBeNull();
      expect(await repo.lockLive(alice, sessionId, 'share')).toBeNull();
      expect((await repo.listForOwner(alice, { limit: 10, order: 'asc' })).items).toEqual([]);
      expect(await repo.cursorSeq(alice, sessionId)).not.toBeNull();
    });

    it('setCurrentContainer moves a live session of the principal only', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const { sessionId, containerId } = await seed.session(alice);
      const next = await seed.container(alice, sessionId);
      await repo.setCurrentContainer(bob, sessionId, next);
      expect((await repo.findForOwner(alice, sessionId))?.currentContainerId).toBe(containerId);
      await repo.setCurrentContainer(alice, sessionId, next);
      expect((await repo.findForOwner(alice, sessionId))?.currentContainerId).toBe(next);
      await repo.markDeleted(alice, sessionId);
      await repo.setCurrentContainer(alice, sessionId, containerId);
      expect(await repo.cursorSeq(alice, sessionId)).not.toBeNull();
    });

    it('lists by seq in either order, a page after a cursor, with has_more', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await seed.session(principal)).sessionId);
      const seqs = await Promise.all(ids.map((id) => repo.cursorSeq(principal, id)));
      const first = await repo.listForOwner(principal, { limit: 2, order: 'desc' });
      expect(first.items.map((row) => row.id)).toEqual([ids[2], ids[1]]);
      expect(first.hasMore).toBe(true);
      const rest = await repo.listForOwner(principal, { limit: 2, order: 'desc', afterSeq: seqs[1]! });
      expect(rest.items.map((row) => row.id)).toEqual([ids[0]]);
      expect(rest.hasMore).toBe(false);
      const asc = await repo.listForOwner(principal, { limit: 5, order: 'asc', afterSeq: seqs[0]! });
      expect(asc.items.map((row) => row.id)).toEqual([ids[1], ids[2]]);
      expect(asc.hasMore).toBe(false);
    });
  });
}
