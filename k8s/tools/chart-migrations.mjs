// `npm run chart:migrations`: writes files/migrations.sha256 into the chart, one `<sha256>  <name>` line per
// migration of libs/db/prisma/migrations (the checksum the migration runner records). In migrate.mode job the
// Job's name carries a hash of it: a Job's pod template is immutable, so new migrations need a new Job.
// test/chart/migrate-mode.test.ts fails when the file is stale.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const migrations = join(root, 'libs/db/prisma/migrations');

export function migrationsDigest() {
  return readdirSync(migrations, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(migrations, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sha = createHash('sha256')
        .update(readFileSync(join(migrations, name, 'migration.sql')))
        .digest('hex');
      return `${sha}  ${name}\n`;
    })
    .join('');
}

export const DIGEST_FILE = join(root, 'k8s/charts/uhp-files/files/migrations.sha256');

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(DIGEST_FILE, migrationsDigest());
