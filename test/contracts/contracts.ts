import { archiveRepositoryContract } from './archive-repository.contract';
import { containerFileRepositoryContract } from './container-file-repository.contract';
import { containerRepositoryContract } from './container-repository.contract';
import { converterStatusRepositoryContract } from './converter-status-repository.contract';
import { fileRepositoryContract } from './file-repository.contract';
import { previewRepositoryContract } from './preview-repository.contract';
import { responseRepositoryContract } from './response-repository.contract';
import { sessionRepositoryContract } from './session-repository.contract';
import { storedObjectRepositoryContract } from './stored-object-repository.contract';
import { transactionsContract } from './transactions.contract';
import { type ContractSubject, type Repositories, Seeds } from './subject';

/** One implementation of every port, fresh or shared, and what to do after each test. */
export type RepositoriesFactory = () => Promise<{ repos: Repositories; cleanup(): Promise<void> }>;

/**
 * Every repository contract, against one implementation. A port that has a fake must have its
 * contract here: the unit tier runs these against the fakes, the integration tier against Postgres.
 */
export function repositoryContracts(make: RepositoriesFactory) {
  const on =
    <R>(pick: (repos: Repositories) => R) =>
    async (): Promise<ContractSubject<R>> => {
      const { repos, cleanup } = await make();
      return { repo: pick(repos), seed: new Seeds(repos), cleanup };
    };
  storedObjectRepositoryContract(on((r) => r.objects));
  fileRepositoryContract(on((r) => r.files));
  sessionRepositoryContract(on((r) => r.sessions));
  containerRepositoryContract(on((r) => ({ containers: r.containers, sessions: r.sessions })));
  containerFileRepositoryContract(
    on((r) => ({ containerFiles: r.containerFiles, containers: r.containers, sessions: r.sessions })),
  );
  responseRepositoryContract(on((r) => ({ responses: r.responses, sessions: r.sessions })));
  previewRepositoryContract(on((r) => r.previews));
  archiveRepositoryContract(on((r) => ({ archives: r.archives, sessions: r.sessions })));
  converterStatusRepositoryContract(on((r) => r.converterStatus));
  transactionsContract(on((r) => ({ transactions: r.transactions, files: r.files })));
}
