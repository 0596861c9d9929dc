import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES } from '@app/contracts';
import { OPENAPI_DOCUMENT } from './openapi.document';

/**
 * The generated parts of docs/api.md: the error table from the one error-code module and the route
 * table from the OpenAPI document, so the prose around them cannot drift from what the gateway serves.
 * `npm run docs:api` rewrites them; a unit test fails while they are stale.
 */
const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

export function errorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(
    ([code, entry]) => `| ${entry.status} | \`${entry.type}\` | \`${code}\` | ${entry.when} |`,
  );
  return ['| status | type | code | when |', '|---|---|---|---|', ...rows].join('\n');
}

interface Operation {
  summary?: string;
  security?: readonly unknown[];
}

export function routeTable(): string {
  const rows: string[] = [];
  for (const [path, item] of Object.entries(
    OPENAPI_DOCUMENT.paths as Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>,
  )) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const key = Array.isArray(operation.security) && operation.security.length === 0 ? 'none' : 'API key';
      rows.push(`| \`${method.toUpperCase()}\` | \`${path}\` | ${operation.summary ?? ''} | ${key} |`);
    }
  }
  return ['| method | path | what | key |', '|---|---|---|---|', ...rows].join('\n');
}

const SECTIONS: Record<string, () => string> = { errors: errorTable, routes: routeTable };

/** The document with every generated section replaced by its current content. */
export function renderApiDoc(text: string): string {
  let out = text;
  for (const [name, render] of Object.entries(SECTIONS)) {
    const pattern = new RegExp(`(<!-- generated:${name} -->\\n)[\\s\\S]*?(\\n<!-- /generated:${name} -->)`);
    if (!pattern.test(out)) throw new Error(`docs/api.md has no generated:${name} section`);
    out = out.replace(pattern, (_match, open: string, close: string) => `${open}${render()}${close}`);
  }
  return out;
}

export const API_DOC_PATH = join(__dirname, '../../../..', 'docs/api.md');

if (require.main === module) {
  const path = join(process.cwd(), 'docs/api.md');
  writeFileSync(path, renderApiDoc(readFileSync(path, 'utf8')));
  process.stdout.write(`${path}: generated sections rewritten\n`);
}
