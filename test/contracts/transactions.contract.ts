import { describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import type { FileRepository, Transactions } from '@app/db';
import { eachSubject, SHA, type SubjectFactory } from './subject';

/** What the unit of work relies on from Transactions: all of a function's writes land, or none. */
export function transactionsContract(subject: SubjectFactory<{ transactions: Transactions; files: FileRepository }>) {
  describe('Transactions contract', () => {
    const current = eachSubject(subject);

    const newFile = async (repos: { files: FileRepository }, principal: string, objectId: string) =>
      repos.files.create(principal, {
        id: newId('file'),
        objectId,
        filename: 'kept.txt',
        bytes: 3,
        contentType: 'text/plain',
        sha256: SHA,
        purpose: 'user_data',
        createdAt: new Date(),
        expiresAt: null,
      });

    it('commits what the function wrote when it resolves, and answers what it returned', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const object = await seed.readyObject(principal);
      const file = await repo.transactions.run(async (repos) => newFile(repos, principal, object.id));
      expect((await repo.files.findForOwner(principal, file.id))?.filename).toBe('kept.txt');
    });

    it('rolls back every write of the function when it throws, and rethrows its error', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const object = await seed.readyObject(principal);
      const written: string[] = [];
      const failure = new Error('changed its mind');
      await expect(
        repo.transactions.run(async (repos) => {
          written.push((await newFile(repos, principal, object.id)).id);
          written.push((await newFile(repos, principal, object.id)).id);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(written).toHaveLength(2);
      for (const id of written) expect(await repo.files.findForOwner(principal, id)).toBeNull();
    });

    it('a write inside the function is seen by its own later reads', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const object = await seed.readyObject(principal);
      const seen = await repo.transactions.run(async (repos) => {
        const file = await newFile(repos, principal, object.id);
        return repos.files.findForOwner(principal, file.id);
      });
      expect(seen?.filename).toBe('kept.txt');
    });
  });
}
