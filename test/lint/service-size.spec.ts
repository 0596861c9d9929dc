import { ESLint } from 'eslint';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '../..');
const eslint = new ESLint({ cwd: ROOT });

/** The max-lines messages ESLint reports for `code` as if it were the file at `path`. */
async function sizeMessages(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return result.messages.filter((message) => message.ruleId === 'max-lines').map((message) => message.message);
}

/** A class of `statements` lines of code, each followed by `padding` (blank lines, comments). */
const serviceOf = (statements: number, padding = '') =>
  'export class SizeService {\n' +
  '  total = 0;\n' +
  Array.from({ length: statements - 3 }, (_, i) => `  step${i} = ${i};\n${padding}`).join('') +
  '}\n';

describe('a service holds at most 250 lines of code', () => {
  // The first lint loads the config and typescript-eslint's parser: slow on a busy machine, not what is tested.
  beforeAll(() => eslint.lintText('', { filePath: join(ROOT, 'apps/gateway/src/size/size.service.ts') }), 60_000);

  it('fires on a *.service.ts over the limit', async () => {
    expect(await sizeMessages('apps/gateway/src/size/size.service.ts', serviceOf(251))).toEqual([
      expect.stringMatching(/too many lines \(251\)\. Maximum allowed is 250/),
    ]);
    expect(await sizeMessages('apps/worker/src/size/size.service.ts', serviceOf(300))).toHaveLength(1);
  });

  it('lets a service at the limit be, and counts neither blank lines nor comments', async () => {
    expect(await sizeMessages('apps/gateway/src/size/size.service.ts', serviceOf(250))).toEqual([]);
    expect(
      await sizeMessages('apps/gateway/src/size/size.service.ts', serviceOf(200, '\n  // why, not what\n')),
    ).toEqual([]);
  });

  it('is about services: another file of the same length, or a service spec, is not held to it', async () => {
    expect(await sizeMessages('apps/gateway/src/size/size-strategy.ts', serviceOf(300))).toEqual([]);
    expect(await sizeMessages('apps/gateway/src/size/size.service.spec.ts', serviceOf(300))).toEqual([]);
  });
});
