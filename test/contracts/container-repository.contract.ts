import { describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import type { ContainerRepository, SessionRepository } from '@app/db';
import { eachSubject, type SubjectFactory } from './subject';

/** What ContainersService relies on from ContainerRepository; `sessions` deletes the session around them. */
export function containerRepositoryContract(
  subject: SubjectFactory<{ containers: ContainerRepository; sessions: SessionRepository }>,
) {
  describe('ContainerRepository contract', () => {
    const current = eachSubject(subject);

    it('create returns the row; only its principal finds, locks or lists it', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const { sessionId } = await seed.session(alice);
      const id = newId('container');
      const row = await repo.containers.create(alice, { id, sessionId, name: 'scratch' });
      expect(row).toMatchObject({ id, sessionId, name: 'scratch' });
      expect(typeof row.seq).toBe('bigint');
      expect(await repo.containers.findForOwner(alice, id)).toEqual(row);
      expect(await repo.containers.lockLive(alice, id)).toEqual(row);
      expect(await repo.containers.findForOwner(bob, id)).toBeNull();
      expect(await repo.containers.lockLive(bob, id)).toBeNull();
      expect(await repo.containers.cursorSeq(bob, id)).toBeNull();
      expect(await repo.containers.markDeleted(bob, id)).toBe(false);
      expect((await repo.containers.listForOwner(bob, { limit: 10, order: 'asc' })).items).toEqual([]);
    });

    it('markDeleted turns a live container once; a deleted one is not found, locked or listed', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const { sessionId, containerId } = await seed.session(principal);
      const other = await seed.container(principal, sessionId);
      expect(await repo.containers.markDeleted(principal, containerId)).toBe(true);
      expect(await repo.containers.markDeleted(principal, containerId)).toBe(false);
      expect(await repo.containers.findForOwner(principal, containerId)).toBeNull();
      expect(await repo.containers.lockLive(principal, containerId)).toBeNull();
      expect(await repo.containers.cursorSeq(principal, containerId)).not.toBeNull();
      const listed = await repo.containers.listForOwner(principal, { limit: 10, order: 'asc' });
      expect(listed.items.map((row) => row.id)).toEqual([other]);
    });

    it('the containers of a deleted session are out of reach, and go with it', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const { sessionId, containerId } = await seed.session(alice);
      const second = await seed.container(alice, sessionId);
      const elsewhere = await seed.session(alice);
      await repo.sessions.markDeleted(alice, sessionId);
      expect(await repo.containers.findForOwner(alice, containerId)).toBeNull();
      expect(await repo.containers.lockLive(alice, second)).toBeNull();
      const listed = await repo.containers.listForOwner(alice, { limit: 10, order: 'asc' });
      expect(listed.items.map((row) => row.id)).toEqual([elsewhere.containerId]);

      await repo.containers.markDeletedInSession(bob, sessionId);
      expect(await repo.containers.markDeleted(alice, second)).toBe(true);
      await repo.containers.markDeletedInSession(alice, sessionId);
      expect(await repo.containers.markDeleted(alice, containerId)).toBe(false);
      expect((await repo.containers.findForOwner(alice, elsewhere.containerId))?.id).toBe(elsewhere.containerId);
    });

    it('markDeletedInSession takes only that session of that principal', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const { sessionId, containerId } = await seed.session(alice);
      await repo.containers.markDeletedInSession(bob, sessionId);
      expect((await repo.containers.findForOwner(alice, containerId))?.id).toBe(containerId);
      await repo.containers.markDeletedInSession(alice, sessionId);
      expect(await repo.containers.findForOwner(alice, containerId)).toBeNull();
      expect(await repo.containers.markDeleted(alice, containerId)).toBe(false);
    });

    it('lists by seq in either order, a page after a cursor, with has_more', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const { sessionId, containerId } = await seed.session(principal);
      const ids = [containerId, await seed.container(principal, sessionId), await seed.container(principal, sessionId)];
      const seqs = await Promise.all(ids.map((id) => repo.containers.cursorSeq(principal, id)));
      const first = await repo.containers.listForOwner(principal, { limit: 2, order: 'asc' });
      expect(first.items.map((row) => row.id)).toEqual(ids.slice(0, 2));
      expect(first.hasMore).toBe(true);
      const rest = await repo.containers.listForOwner(principal, { limit: 2, order: 'asc', afterSeq: seqs[1]! });
      expect(rest).toMatchObject({ hasMore: false });
      expect(rest.items.map((row) => row.id)).toEqual([ids[2]]);
      const desc = await repo.containers.listForOwner(principal, { limit: 2, order: 'desc', afterSeq: seqs[2]! });
      expect(desc.items.map((row) => row.id)).toEqual([ids[1], ids[0]]);
      expect(desc.hasMore).toBe(false);
    });
  });
}
