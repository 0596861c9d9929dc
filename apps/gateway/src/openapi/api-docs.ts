import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Type } from '@nestjs/common';
import { gatewayConfigSchema, renderConfigurationReference } from '@app/common';
import { ERROR_CODES, supportedExtensions } from '@app/contracts';
import { ArchivesController } from '../archives/archives.controller';
import { ContainersController } from '../containers/containers.controller';
import { FilesController } from '../files/files.controller';
import { jsonBodyRoutes } from '../http/json-body.decorator';
import { LimitsController, limitsBody } from '../limits/limits.controller';
import { PreviewsController } from '../previews/previews.controller';
import { ResponsesController } from '../responses/responses.controller';
import { SessionsController } from '../sessions/sessions.controller';
import { TusController } from '../tus/tus.controller';
import { UploadsController } from '../uploads/openai/uploads.controller';
import { OPENAPI_DOCUMENT } from './openapi.document';

/**
 * The generated reference docs, made from the code so the prose around them cannot drift from what the
 * services serve and read: docs/api.md's error table (the one error-code module), route table (the OpenAPI
 * document) and `/v1/limits` shape (the limits controller's own function, under the default configuration);
 * docs/architecture.md's count of JSON routes (the controllers); docs/openapi.json (the document /openapi.json
 * serves); docs/configuration.md (the config schema). `npm run docs:api` rewrites them all; unit tests fail
 * while any is stale.
 */

/** The controllers of the public /v1 API. */
export const API_CONTROLLERS: Type[] = [
  LimitsController,
  FilesController,
  UploadsController,
  TusController,
  SessionsController,
  ContainersController,
  PreviewsController,
  ResponsesController,
  ArchivesController,
];

export const REGENERATE = 'npm run docs:api';

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options'] as const;

interface Operation {
  summary?: string;
  security?: readonly unknown[];
  'x-cors-preflight'?: boolean;
}

export function errorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(
    ([code, entry]) => `| ${entry.status} | \`${entry.type}\` | \`${code}\` | ${entry.when} |`,
  );
  return ['| status | type | code | when |', '|---|---|---|---|', ...rows].join('\n');
}

/**
 * Every operation of the document. The CORS preflight every /v1 path answers is one row, not one per path; the
 * OPTIONS that does more (tus discovery) has its own.
 */
export function routeTable(): string {
  const rows: string[] = [];
  for (const [path, item] of Object.entries(
    OPENAPI_DOCUMENT.paths as Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>,
  )) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation || operation['x-cors-preflight']) continue;
      const key = Array.isArray(operation.security) && operation.security.length === 0 ? 'none' : 'API key';
      rows.push(`| \`${method.toUpperCase()}\` | \`${path}\` | ${operation.summary ?? ''} | ${key} |`);
    }
  }
  rows.push('| `OPTIONS` | every `/v1` path | CORS preflight (§1 "Browsers") | none |');
  return ['| method | path | what | key |', '|---|---|---|---|', ...rows].join('\n');
}

/** GET /v1/limits under the default configuration, with every converter installed. */
export function defaultLimits() {
  const formats = Object.values(supportedExtensions()).flat().sort();
  return limitsBody(gatewayConfigSchema.parse({}), formats);
}

interface SchemaNode {
  type?: string;
  description?: string;
  properties?: Record<string, SchemaNode>;
}

/** A number of bytes with its binary unit beside it when one divides it. */
function withUnit(field: string, value: unknown): string {
  const text = Array.isArray(value) ? value.map((item) => `\`${String(item)}\``).join(', ') : `\`${String(value)}\``;
  if (typeof value !== 'number' || !field.endsWith('bytes')) return text;
  for (const [unit, size] of [
    ['TiB', 2 ** 40],
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
  ] as const)
    if (value >= size && value % size === 0) return `${text} (${value / size} ${unit})`;
  return text;
}

/** The `/v1/limits` body by default, then each field with its default and meaning from the OpenAPI schema. */
export function limitsSection(): string {
  const body = defaultLimits() as unknown as Record<string, unknown>;
  const schema = (OPENAPI_DOCUMENT.components.schemas as unknown as Record<string, SchemaNode>).Limits;
  const rows: string[] = [];
  const walk = (node: SchemaNode, value: Record<string, unknown>, prefix: string) => {
    for (const [name, field] of Object.entries(node.properties ?? {})) {
      if (name === 'object') continue;
      const path = `${prefix}${name}`;
      if (field.properties) walk(field, value[name] as Record<string, unknown>, `${path}.`);
      else rows.push(`| \`${path}\` | ${withUnit(name, value[name])} | ${field.description ?? ''} |`);
    }
  };
  walk(schema, body, '');
  const formats = body.preview as { formats: string[] };
  // Arrays of plain values on one line, as a person would write the example.
  const example = JSON.stringify({ ...body, preview: { ...formats, formats: ['…'] } }, null, 2).replace(
    /\[\n\s*([^[\]{}]*?)\n\s*\]/g,
    (_match, items: string) => `[${items.split(/,\n\s*/).join(', ')}]`,
  );
  return [
    '```json',
    example,
    '```',
    '',
    `With every converter installed, \`preview.formats\` is ${withUnit('formats', formats.formats)}.`,
    '',
    '| field | default | what |',
    '|---|---|---|',
    ...rows,
  ].join('\n');
}

const NUMBER_WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
const inWords = (count: number) => NUMBER_WORDS[count] ?? String(count);

/** The routes that read a JSON body, as the gateway's middleware finds them. */
export const jsonRouteCount = () => inWords(jsonBodyRoutes(API_CONTROLLERS).length);

type Sections = Record<string, { render: () => string; inline?: boolean }>;

const API_SECTIONS: Sections = {
  errors: { render: errorTable },
  routes: { render: routeTable },
  limits: { render: limitsSection },
};
const ARCHITECTURE_SECTIONS: Sections = { 'json-route-count': { render: jsonRouteCount, inline: true } };

/** The text with every generated section replaced by its current content: a block on lines of its own, or inline. */
function renderSections(text: string, sections: Sections, file: string): string {
  let out = text;
  for (const [name, { render, inline }] of Object.entries(sections)) {
    const pattern = new RegExp(`(<!-- generated:${name} -->)[\\s\\S]*?(<!-- /generated:${name} -->)`);
    if (!pattern.test(out)) throw new Error(`${file} has no generated:${name} section`);
    const content = inline ? render() : `\n${render()}\n`;
    out = out.replace(pattern, (_match, open: string, close: string) => `${open}${content}${close}`);
  }
  return out;
}

export const renderApiDoc = (text: string) => renderSections(text, API_SECTIONS, 'docs/api.md');
export const renderArchitectureDoc = (text: string) =>
  renderSections(text, ARCHITECTURE_SECTIONS, 'docs/architecture.md');
export const renderOpenApiJson = () => `${JSON.stringify(OPENAPI_DOCUMENT, null, 2)}\n`;

/** Each generated file, relative to the repository root, with how it is made from its committed text. */
export const GENERATED_DOCS: Record<string, (committed: string) => string> = {
  'docs/api.md': renderApiDoc,
  'docs/architecture.md': renderArchitectureDoc,
  'docs/openapi.json': renderOpenApiJson,
  'docs/configuration.md': renderConfigurationReference,
};

/** The repository root as seen from this file in the source tree (the unit tests run it there). */
export const REPOSITORY_ROOT = join(__dirname, '../../../..');

if (require.main === module) {
  for (const [file, render] of Object.entries(GENERATED_DOCS)) {
    const path = join(process.cwd(), file);
    let committed = '';
    try {
      committed = readFileSync(path, 'utf8');
    } catch {
      // A page made whole by its generator may not exist yet.
    }
    const next = render(committed);
    if (next !== committed) writeFileSync(path, next);
    process.stdout.write(`${file}: ${next === committed ? 'current' : 'rewritten'}\n`);
  }
}
