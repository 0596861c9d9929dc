/**
 * Operators' API key tool:
 *   npm run keys -- create <principal> [--label <text>]   prints the new key once; only its hash is stored
 *   npm run keys -- list [<principal>]
 *   npm run keys -- revoke <key id | key prefix>
 * Reads DATABASE_DIRECT_URL, else DATABASE_URL, like the migrations; when the environment has neither, the
 * local stack's `.data/local.env` (written by `npm start`, see libs/common local-env) supplies it.
 */
import { applyLocalEnv, databaseConfigSchema, loadConfig } from '@app/common';
import { AmbiguousKeyError, openPrincipals, type PrincipalRepository } from '@app/db';
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../auth/api-key';

const USAGE =
  'usage: keys create <principal> [--label <text>] | keys list [<principal>] | keys revoke <key id | prefix>';
const PRINCIPAL_NAME = /^[A-Za-z0-9._-]{1,64}$/;

export async function runKeysCommand(
  args: string[],
  principals: PrincipalRepository,
  out: (line: string) => void,
): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'create': {
      const name = rest[0];
      const labelAt = rest.indexOf('--label');
      const label = labelAt >= 0 ? (rest[labelAt + 1] ?? null) : null;
      if (!name || !PRINCIPAL_NAME.test(name)) {
        out(`a principal name of 1-64 characters A-Za-z0-9._- is required\n${USAGE}`);
        return 2;
      }
      const key = generateApiKey();
      await principals.ensureKey(name, hashApiKey(key), apiKeyPrefix(key), label);
      out(key);
      return 0;
    }
    case 'list': {
      const keys = await principals.listKeys(rest[0]);
      out(['id', 'principal', 'prefix', 'label', 'created', 'revoked'].join('\t'));
      for (const key of keys)
        out(
          [
            key.id,
            key.principalName,
            key.keyPrefix,
            key.label ?? '',
            key.createdAt.toISOString(),
            key.revokedAt?.toISOString() ?? '',
          ].join('\t'),
        );
      return 0;
    }
    case 'revoke': {
      if (!rest[0]) {
        out(USAGE);
        return 2;
      }
      let revoked: number;
      try {
        revoked = await principals.revoke(rest[0]);
      } catch (error) {
        if (!(error instanceof AmbiguousKeyError)) throw error;
        out(error.message);
        return 2;
      }
      out(`revoked ${revoked} key(s)`);
      return revoked > 0 ? 0 : 1;
    }
    default:
      out(USAGE);
      return 2;
  }
}

async function main() {
  const local = applyLocalEnv();
  if (local?.applied.length) process.stderr.write(`keys: ${local.applied.join(', ')} from ${local.path}\n`);
  const config = loadConfig(databaseConfigSchema);
  const database = openPrincipals(config.DATABASE_DIRECT_URL ?? config.DATABASE_URL);
  try {
    process.exitCode = await runKeysCommand(process.argv.slice(2), database.principals, (line) =>
      process.stdout.write(`${line}\n`),
    );
  } finally {
    await database.close();
  }
}

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
