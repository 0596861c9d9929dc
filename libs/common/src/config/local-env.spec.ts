import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyLocalEnv, localEnvPath, parseEnvFile } from './local-env';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(text?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'uhp-local-env-'));
  made.push(dir);
  if (text !== undefined) writeFileSync(join(dir, 'local.env'), text);
  return dir;
}

describe('parseEnvFile', () => {
  it('reads KEY=value lines as written, skipping comments and blank lines', () => {
    const text = '# made by start.sh\n\nDATABASE_URL=postgresql://u@h:5432/db?x=1\r\nexport A=b c\nnot a line\n';
    expect(parseEnvFile(text)).toEqual({ DATABASE_URL: 'postgresql://u@h:5432/db?x=1', A: 'b c' });
  });
});

describe('localEnvPath', () => {
  it('is .data/local.env under the working directory, or under UHP_DATA_DIR (relative to it too)', () => {
    expect(localEnvPath({}, '/repo')).toBe('/repo/.data/local.env');
    expect(localEnvPath({ UHP_DATA_DIR: '/srv/uhp' }, '/repo')).toBe('/srv/uhp/local.env');
    expect(localEnvPath({ UHP_DATA_DIR: 'state' }, '/repo')).toBe('/repo/state/local.env');
  });
});

describe('applyLocalEnv', () => {
  it('fills only the variables the environment leaves unset or empty', () => {
    const dir = dataDir('S3_BUCKET=local\nDATABASE_URL=postgresql://file\nS3_REGION=here\n');
    const env: NodeJS.ProcessEnv = { UHP_DATA_DIR: dir, DATABASE_URL: 'postgresql://mine', S3_REGION: '' };
    const outcome = applyLocalEnv(env, '/nowhere');
    expect(outcome).toEqual({ path: join(dir, 'local.env'), applied: ['S3_BUCKET', 'S3_REGION'] });
    expect(env).toMatchObject({ S3_BUCKET: 'local', DATABASE_URL: 'postgresql://mine', S3_REGION: 'here' });
  });

  it('changes nothing when there is no file', () => {
    const env: NodeJS.ProcessEnv = { UHP_DATA_DIR: dataDir() };
    expect(applyLocalEnv(env)).toBeUndefined();
    expect(Object.keys(env)).toEqual(['UHP_DATA_DIR']);
  });
});
