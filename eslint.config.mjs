// Lint for uhp-files: typescript-eslint's recommended rules, Prettier for layout, and the walls of
// docs/architecture.md as import rules that fail the build.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const ROOT = dirname(fileURLToPath(import.meta.url));

/** The public entries of the libraries, as tsconfig.json declares them: `@app/<lib>` and its named sub-entries. */
const ENTRIES = new Map(
  Object.entries(JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')).compilerOptions.paths).map(
    ([name, [target]]) => [name, normalize(target).replace(/\.ts$/, '').split(sep).join('/')],
  ),
);

/** What each library may import besides npm packages: `libs/db` knows no queue and no object store. */
const LIBRARY_DEPENDENCIES = {
  contracts: [],
  common: ['contracts'],
  db: ['common', 'contracts'],
  queue: ['common', 'contracts'],
  lifecycle: ['common', 'contracts', 'db', 'queue'],
};

/** The most lines of code a `*.service.ts` may hold (test/lint/service-size.spec.ts proves the rule fires). */
const SERVICE_MAX_LINES = 250;

/** An entry → the path it names from the repository root; a relative import → the same. */
function resolveImport(file, specifier) {
  if (ENTRIES.has(specifier)) return ENTRIES.get(specifier);
  if (specifier.startsWith('.'))
    return relative(ROOT, normalize(join(dirname(file), specifier)))
      .split(sep)
      .join('/');
  return null;
}

const libOf = (path) => /^libs\/([^/]+)\//.exec(path)?.[1] ?? null;
const appOf = (path) => /^apps\/([^/]+)\//.exec(path)?.[1] ?? null;

/** Files that may reach the Prisma client: the repositories, transactions, and the wiring beside them. */
const PRISMA_ALLOWED = new RegExp(
  '^libs/db/src/(repositories/|transactions\\.ts$|' +
    'prisma\\.service\\.ts$|prisma\\.providers\\.ts$|db\\.module\\.ts$|database\\.ts$|index\\.ts$)',
);
const isPrismaImport = (specifier, resolved) =>
  specifier.startsWith('@prisma/') || /libs\/db\/src\/(generated(\/|$)|prisma\.service$)/.test(resolved ?? '');
/** Where Express types may appear: the HTTP edge (controllers, middleware, the http folders, main.ts). */
const EXPRESS_ALLOWED = /(\.controller\.ts|\.middleware\.ts|\/main\.ts)$|\/src\/http\//;
const isQueueImport = (specifier, resolved) =>
  /^(bullmq|@nestjs\/bullmq)$/.test(specifier) || /^libs\/(queue|lifecycle)\//.test(`${resolved}/`);

/** The walls: who may import whom. Tests and benchmarks stand outside them. */
const walls = {
  meta: { type: 'problem', docs: { description: 'the import walls of docs/architecture.md' }, schema: [] },
  create(context) {
    const file = relative(ROOT, context.filename).split(sep).join('/');
    if (!/^(apps|libs)\//.test(file)) return {};
    const check = (node, specifier) => {
      if (typeof specifier !== 'string') return;
      const resolved = resolveImport(context.filename, specifier);
      const fromApp = appOf(file);
      const toApp = resolved ? appOf(`${resolved}/`) : null;
      const report = (message) => context.report({ node, message: `${message} (${specifier})` });
      if (fromApp && toApp && fromApp !== toApp)
        report(`apps/${fromApp} must not import apps/${toApp}: no app imports another`);
      if (file.startsWith('libs/') && resolved?.startsWith('apps/')) report('libs never import apps');
      if (/^@app\//.test(specifier) && !ENTRIES.has(specifier))
        report('a library is imported through an entry tsconfig.json declares, never by a deep path');
      const fromLib = libOf(file);
      const toLib = resolved ? libOf(`${resolved}/`) : null;
      if (toLib && toLib !== fromLib && specifier.startsWith('.'))
        report('a library is imported through an entry tsconfig.json declares, never by a relative path');
      if (fromLib && toLib && toLib !== fromLib && !LIBRARY_DEPENDENCIES[fromLib]?.includes(toLib))
        report(`libs/${fromLib} must not import libs/${toLib}`);
      if (specifier.startsWith('@aws-sdk/') && !file.startsWith('apps/storage/'))
        report('only apps/storage talks to S3');
      if (isPrismaImport(specifier, resolved) && !PRISMA_ALLOWED.test(file))
        report('only repositories and transactions touch the Prisma client');
      if (
        isQueueImport(specifier, resolved) &&
        (fromApp === 'storage' || ['common', 'contracts', 'db'].includes(fromLib))
      )
        report('the queue is for the gateway and the worker: apps/storage and libs/common, contracts, db load none');
      if (/^(express|@nestjs\/platform-express)(\/|$)/.test(specifier) && !EXPRESS_ALLOWED.test(file))
        report(
          'Express types stay at the HTTP edge (controllers, middleware, http/): services speak in their own types',
        );
      if (/^(node:)?child_process$/.test(specifier) && !file.startsWith('apps/worker/src/previews/sandbox/'))
        report("child processes start only in the worker's converter sandbox");
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) =>
        node.source && node.exportKind !== 'type' && check(node.source, node.source.value),
      ImportExpression: (node) => check(node.source, node.source.value),
      CallExpression: (node) =>
        node.callee.type === 'Identifier' &&
        node.callee.name === 'require' &&
        check(node.arguments[0], node.arguments[0]?.value),
    };
  },
};

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', 'coverage/', 'libs/db/src/generated/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    plugins: { uhp: { rules: { walls } } },
    languageOptions: { globals: { ...globals.node } },
    rules: {
      'uhp/walls': 'error',
      // Filenames, entry names and HTML are checked for control characters on purpose.
      'no-control-regex': 'off',
      'max-len': ['error', { code: 120, ignoreUrls: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // A service is one feature's plain logic; one that outgrows this is doing a second job, which wants a class
    // of its own (as the Uploads API's completion strategies became). Blank lines and comments are free.
    files: ['**/*.service.ts'],
    rules: { 'max-lines': ['error', { max: SERVICE_MAX_LINES, skipBlankLines: true, skipComments: true }] },
  },
  {
    // Plain CommonJS scripts that run as processes of their own (the image renderer): require() is how they load.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests and benchmarks carry literal data (XML fixtures, SQL, generated Markdown) whose lines are not
    // broken without changing it; their code and comments keep the limit.
    files: ['test/**', 'bench/**', '**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      'max-len': [
        'error',
        { code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
    },
  },
);
