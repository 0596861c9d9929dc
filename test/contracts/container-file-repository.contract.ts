import { describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import type { ContainerFileRepository, ContainerFileRow, ContainerRepository, SessionRepository } from '@app/db';
import { eachSubject, SHA, type SubjectFactory } from './subject';

const listing = ({ storageKey: _key, ...row }: ContainerFileRow) => row;
const ids = (page: { items: { id: string }[] }) => page.items.map((row) => row.id);

/**
 * What the container-file, archive and response services rely on from ContainerFileRepository;
 * `containers` and `sessions` delete what the files sit in.
 */
export function containerFileRepositoryContract(
  subject: SubjectFactory<{
    containerFiles: ContainerFileRepository;
    containers: ContainerRepository;
    sessions: SessionRepository;
  }>,
) {
  describe('ContainerFileRepository contract', () => {
    const current = eachSubject(subject);

    it('create returns the row with its object key; only its principal reaches it, in its container', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const at = await seed.session(alice);
      const object = await seed.readyObject(alice);
      const id = newId('file');
      const createdAt = new Date(Date.UTC(2026, 1, 3, 4, 5, 6, 7));
      const row = await repo.containerFiles.create(alice, {
        id,
        ...at,
        objectId: object.id,
        filename: 'report.md',
        bytes: 5n,
        contentType: 'text/markdown',
        sha256: null,
        source: 'assistant',
        responseId: newId('response'),
        createdAt,
      });
      expect(row).toMatchObject({ id, ...at, objectId: object.id, bytes: 5n, sha256: null, source: 'assistant' });
      expect(row).toMatchObject({ createdAt, storageKey: object.storageKey, filename: 'report.md' });
      expect(typeof row.seq).toBe('bigint');
      expect(await repo.containerFiles.findForOwner(alice, at.containerId, id)).toEqual(row);
      expect(await repo.containerFiles.findForOwner(bob, at.containerId, id)).toBeNull();
      expect(await repo.containerFiles.findForOwner(alice, newId('container'), id)).toBeNull();
      expect(await repo.containerFiles.markDeleted(bob, at.containerId, id)).toBeNull();
      expect(await repo.containerFiles.markDeletedInContainer(bob, at.containerId)).toEqual([]);
      expect(await repo.containerFiles.markDeletedInSession(bob, at.sessionId)).toEqual([]);
      expect(
        (await repo.containerFiles.listForContainer(bob, at.containerId, { limit: 5, order: 'asc' })).items,
      ).toEqual([]);
      expect((await repo.containerFiles.listSessionArtifacts(bob, at.sessionId, undefined, 5)).items).toEqual([]);
      expect(await repo.containerFiles.cursorSeq(bob, { containerId: at.containerId }, id)).toBeNull();
    });

    it('filenamesInContainer names those of the ids that are live files of that container of the principal', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const at = await seed.session(alice);
      const a = await seed.containerFile(alice, at, { filename: 'a.txt' });
      const b = await seed.containerFile(alice, at, { filename: 'b.txt' });
      const gone = await seed.containerFile(alice, at, { filename: 'gone.txt' });
      const elsewhere = await seed.containerFile(alice, {
        ...at,
        containerId: await seed.container(alice, at.sessionId),
      });
      await repo.containerFiles.markDeleted(alice, at.containerId, gone.id);
      const all = [a.id, b.id, gone.id, elsewhere.id, newId('file')];
      expect(await repo.containerFiles.filenamesInContainer(alice, at.containerId, all)).toEqual(
        new Map([
          [a.id, 'a.txt'],
          [b.id, 'b.txt'],
        ]),
      );
      expect(await repo.containerFiles.filenamesInContainer(bob, at.containerId, all)).toEqual(new Map());
      expect(await repo.containerFiles.filenamesInContainer(alice, at.containerId, [])).toEqual(new Map());
      await repo.containers.markDeleted(alice, at.containerId);
      expect(await repo.containerFiles.filenamesInContainer(alice, at.containerId, all)).toEqual(new Map());
    });

    it('markDeleted turns a live file of a live container once and hands back its object', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const at = await seed.session(principal);
      const file = await seed.containerFile(principal, at);
      const kept = await seed.containerFile(principal, at);
      expect(await repo.containerFiles.markDeleted(principal, newId('container'), file.id)).toBeNull();
      expect(await repo.containerFiles.markDeleted(principal, at.containerId, file.id)).toBe(file.objectId);
      expect(await repo.containerFiles.markDeleted(principal, at.containerId, file.id)).toBeNull();
      expect(await repo.containerFiles.findForOwner(principal, at.containerId, file.id)).toBeNull();
      expect(await repo.containerFiles.cursorSeq(principal, at, file.id)).toBe(file.seq);
      await repo.containers.markDeleted(principal, at.containerId);
      expect(await repo.containerFiles.findForOwner(principal, at.containerId, kept.id)).toBeNull();
      expect(await repo.containerFiles.markDeleted(principal, at.containerId, kept.id)).toBeNull();
    });

    it('a file of a deleted session is out of reach; listings trust the file row alone', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const at = await seed.session(principal);
      const file = await seed.containerFile(principal, at);
      await repo.sessions.markDeleted(principal, at.sessionId);
      expect(await repo.containerFiles.findForOwner(principal, at.containerId, file.id)).toBeNull();
      expect(await repo.containerFiles.filenamesInContainer(principal, at.containerId, [file.id])).toEqual(new Map());
      // Deleting a session marks its files in the same unit of work, so a listing checks the file only.
      expect(ids(await repo.containerFiles.listSessionArtifacts(principal, at.sessionId, undefined, 5))).toEqual([
        file.id,
      ]);
      expect(await repo.containerFiles.markDeletedInSession(principal, at.sessionId)).toEqual([file.objectId]);
      expect(await repo.containerFiles.markDeletedInSession(principal, at.sessionId)).toEqual([]);
      expect((await repo.containerFiles.listSessionArtifacts(principal, at.sessionId, undefined, 5)).items).toEqual([]);
    });

    it('markDeletedInContainer returns the objects of exactly the live files of that container', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const at = await seed.session(principal);
      const other = { ...at, containerId: await seed.container(principal, at.sessionId) };
      const a = await seed.containerFile(principal, at);
      const b = await seed.containerFile(principal, at);
      const gone = await seed.containerFile(principal, at);
      const kept = await seed.containerFile(principal, other);
      await repo.containerFiles.markDeleted(principal, at.containerId, gone.id);
      const released = await repo.containerFiles.markDeletedInContainer(principal, at.containerId);
      expect([...released].sort()).toEqual([a.objectId, b.objectId].sort());
      expect(await repo.containerFiles.markDeletedInContainer(principal, at.containerId)).toEqual([]);
      expect((await repo.containerFiles.findForOwner(principal, other.containerId, kept.id))?.id).toBe(kept.id);
    });

    it('lists a container by seq in either order and a session across containers, oldest first, by pages', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const at = await seed.session(principal);
      const other = { ...at, containerId: await seed.container(principal, at.sessionId) };
      const made = [
        await seed.containerFile(principal, at, { filename: 'one.txt' }),
        await seed.containerFile(principal, other, { filename: 'two.txt' }),
        await seed.containerFile(principal, at, { filename: 'three.txt', sha256: SHA }),
        await seed.containerFile(principal, at, { filename: 'four.txt' }),
      ];
      const inAt = [made[0], made[2], made[3]];
      const asc = await repo.containerFiles.listForContainer(principal, at.containerId, { limit: 2, order: 'asc' });
      expect(asc).toEqual({ items: inAt.slice(0, 2).map(listing), hasMore: true });
      const desc = await repo.containerFiles.listForContainer(principal, at.containerId, {
        limit: 2,
        order: 'desc',
        afterSeq: made[3].seq,
      });
      expect(desc).toEqual({ items: [made[2], made[0]].map(listing), hasMore: false });
      expect(await repo.containerFiles.cursorSeq(principal, { containerId: at.containerId }, made[1].id)).toBeNull();
      expect(await repo.containerFiles.cursorSeq(principal, { sessionId: at.sessionId }, made[1].id)).toBe(made[1].seq);

      const first = await repo.containerFiles.listSessionArtifacts(principal, at.sessionId, undefined, 3);
      expect(first).toEqual({ items: made.slice(0, 3).map(listing), hasMore: true });
      const rest = await repo.containerFiles.listSessionArtifacts(principal, at.sessionId, made[2].seq, 3);
      expect(rest).toEqual({ items: [listing(made[3])], hasMore: false });
      const objects = await repo.containerFiles.listSessionArtifactObjects(principal, at.sessionId, made[0].seq, 2);
      expect(objects).toEqual({ items: made.slice(1, 3), hasMore: true });
      const all = await repo.containerFiles.listSessionArtifactObjects(principal, at.sessionId, undefined, 4);
      expect(all).toEqual({ items: made, hasMore: false });
    });
  });
}
