import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The settings `npm start` (infra/local/start.sh) gave the stack it runs, as `KEY=value` lines in
 * `$UHP_DATA_DIR/local.env` (default `.data/local.env` in the checkout). The operator CLIs (`npm run doctor`,
 * `npm run keys`) read it so that they reach the same database and bucket with no environment of their own:
 * the local S3 keys, for one, live nowhere else outside that script.
 */
export const LOCAL_ENV_FILE = 'local.env';

/**
 * Where the file is: `$UHP_DATA_DIR/local.env`, or `.data/local.env` under `cwd` (`npm run` starts its scripts
 * in the repository root, as infra/local does its data folder). A relative UHP_DATA_DIR counts from `cwd`, as in
 * the shell scripts.
 */
export function localEnvPath(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  const dataDir = env.UHP_DATA_DIR ? resolve(cwd, env.UHP_DATA_DIR) : join(cwd, '.data');
  return join(dataDir, LOCAL_ENV_FILE);
}

/**
 * `KEY=value` lines; blank lines and `#` comments are skipped. A value is taken as written, up to the end of
 * the line (no quotes, no escapes, no `${…}`), the way `docker run --env-file` reads such a file: the script
 * writes plain values only, so the same file also works with `set -a; . .data/local.env`.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (match) settings[match[1]] = match[2];
  }
  return settings;
}

export interface LocalEnvOutcome {
  path: string;
  /** The variables taken from the file: those the environment did not set (or set empty). */
  applied: string[];
}

/**
 * Fills the variables the environment leaves unset from the local file, never overriding one that is set:
 * an operator's own `DATABASE_URL` always wins. Returns undefined when there is no file (an image, a cluster),
 * which is not an error: the environment is then the whole configuration, as for the services.
 */
export function applyLocalEnv(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): LocalEnvOutcome | undefined {
  const path = localEnvPath(env, cwd);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const applied: string[] = [];
  for (const [key, value] of Object.entries(parseEnvFile(text))) {
    if (env[key] !== undefined && env[key] !== '') continue;
    env[key] = value;
    applied.push(key);
  }
  return { path, applied };
}
