import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '../..');

/** Packages production needs without a line of ours importing them, each with the reason. */
const LOADED_WITHOUT_AN_IMPORT: Record<string, string> = {
  '@nestjs/platform-express': 'NestFactory loads the HTTP adapter by name when an app is created',
  '@prisma/client': "the generated client in libs/db/src/generated runs on Prisma's runtime",
};

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'generated' && entry.name !== 'node_modules') yield* sourceFiles(path);
    } else if (/\.(ts|cjs|mjs|js)$/.test(entry.name) && !/\.spec\.ts$/.test(entry.name)) yield path;
  }
}

/** The npm packages a file imports (TypeScript's own scan: imports, exports, require() and import()). */
function packagesImportedBy(code: string): string[] {
  return ts
    .preProcessFile(code, true, true)
    .importedFiles.map((file) => file.fileName)
    .filter((name) => !/^(\.|@app\/|node:)/.test(name) && !builtinModules.includes(name))
    .map((name) => (name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]));
}

describe('production dependencies', () => {
  it('are exactly the packages production code imports (apps/ and libs/, specs aside)', () => {
    const imported = new Map<string, string>();
    for (const top of ['apps', 'libs'])
      for (const file of sourceFiles(join(ROOT, top)))
        for (const name of packagesImportedBy(readFileSync(file, 'utf8')))
          if (!imported.has(name)) imported.set(name, relative(ROOT, file));
    const declared = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies).sort();
    const needed = [...new Set([...imported.keys(), ...Object.keys(LOADED_WITHOUT_AN_IMPORT)])].sort();
    expect(declared, 'package.json "dependencies" versus what apps/ and libs/ import').toEqual(needed);
  });

  it('finds every form of import', () => {
    const code = [
      "import { a } from 'alpha';",
      "import 'beta/register';",
      'export * from "@scope/gamma/sub";',
      "const d = require('delta');",
      "const e = await import('epsilon');",
      "import { f } from './local';",
      "import { g } from 'node:fs';",
      "import { h } from '@app/common';",
      "import { i } from 'path';",
      '// text that reads from "uploaded" to "processed" is no import',
    ].join('\n');
    expect(packagesImportedBy(code)).toEqual(['alpha', 'beta', '@scope/gamma', 'delta', 'epsilon']);
  });
});
