import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The README's curl tour, held against the OpenAPI document it describes: types generated from
 * docs/openapi.json with openapi-typescript must accept every JSON body the tour sends and have every field
 * it reads back with jq. A route, a body or a field the document lost (or never had) fails here, so the
 * document a client generates its types from cannot drift from what the README shows people doing.
 */
const ROOT = join(__dirname, '../..');
const DOCUMENT = JSON.parse(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8')) as { paths: object };
const ROUTES = Object.keys(DOCUMENT.paths);

/** One request of the tour: the route, and what it sends and reads. */
export interface TourCall {
  method: 'get' | 'post' | 'delete';
  route: string;
  body?: unknown;
  /** jq paths read from its answer (`.data[].filename`). */
  reads: string[];
}

/** A shell variable spliced into a single-quoted body (`'{"id": "'"$SID"'"}'`) as a placeholder string. */
const spliced = (command: string) => command.replace(/'"\$(\w+)"'/g, 'placeholder-$1');

/** The shell commands of the README's `sh` fences, a command per entry (a quoted body spans lines). */
function commandsOf(markdown: string): string[] {
  const fences = [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]);
  const commands: string[] = [];
  for (const fence of fences) {
    let open = '';
    for (const line of fence.split('\n')) {
      open = open ? `${open}\n${line}` : line;
      // a quoted JSON body that spans lines: `'...'` quotes balance once the command is whole
      if ((spliced(open).match(/'/g)?.length ?? 0) % 2 === 0) {
        commands.push(open);
        open = '';
      }
    }
  }
  return commands;
}

/** The documented route a tour URL names (`/v1/containers/$CID/files`: `/v1/containers/{container_id}/files`). */
function routeOf(path: string): string {
  const segments = path.split('/');
  const route = ROUTES.find((candidate) => {
    const parts = candidate.split('/');
    return parts.length === segments.length && parts.every((part, i) => part.startsWith('{') || part === segments[i]);
  });
  if (!route) throw new Error(`the README calls ${path}, which docs/openapi.json does not describe`);
  return route;
}

/** The tour's calls, with the body each sends and the jq paths read from each answer. */
export function tourCalls(markdown: string): TourCall[] {
  const calls: TourCall[] = [];
  const byVariable = new Map<string, TourCall>();
  for (const command of commandsOf(markdown)) {
    const url = /"\$UHP_URL(\/v1\/[^"?]*)/.exec(command);
    const read = (call: TourCall, text: string) => {
      for (const match of text.matchAll(/jq -r '?([.][^' <)]+)'?/g)) call.reads.push(match[1]);
    };
    if (!url) {
      // `X=$(jq -r .id <<<"$SESSION")`: a read of an earlier call's answer, held in a variable
      for (const match of command.matchAll(/jq -r '?([.][^' <)]+)'? <<<"\$(\w+)"/g))
        byVariable.get(match[2])?.reads.push(match[1]);
      continue;
    }
    const body = /-d '([\s\S]*?)'(?=\s|\)|$)/.exec(spliced(command))?.[1];
    const method = /-X DELETE/.test(command) ? 'delete' : body !== undefined || /\s-F\s/.test(command) ? 'post' : 'get';
    const call: TourCall = { method, route: routeOf(url[1]), reads: [] };
    if (body !== undefined) call.body = JSON.parse(body);
    read(call, command.slice(command.indexOf(url[0])));
    const assigned = /^(\w+)=\$\(/.exec(command.trim());
    if (assigned) byVariable.set(assigned[1], call);
    calls.push(call);
  }
  return calls;
}

/** TypeScript that compiles only when the generated types accept the tour's bodies and have what it reads. */
export function tourProgram(calls: TourCall[]): string {
  const lines = ["import type { paths } from './api';", ''];
  calls.forEach((call, i) => {
    const operation = `paths['${call.route}']['${call.method}']`;
    if (call.body !== undefined)
      lines.push(
        `export const body${i}: NonNullable<${operation}['requestBody']>['content']['application/json'] = ` +
          `${JSON.stringify(call.body)};`,
      );
    if (call.reads.length === 0) return;
    lines.push(`declare const answer${i}: ${operation}['responses'][200]['content']['application/json'];`);
    for (const read of call.reads) {
      const access = read
        .replace(/\[\]/g, '[0]')
        .replace(/\.(\w+)/g, '?.$1')
        .replace(/\[(\d+)\]/g, '?.[$1]');
      lines.push(`export const read${i}_${lines.length} = answer${i}${access};`);
    }
  });
  return `${lines.join('\n')}\n`;
}

describe('the README against types generated from docs/openapi.json (openapi-typescript)', () => {
  let dir: string;

  /** The compiler's complaints about `program`, beside the generated api.d.ts. */
  const compile = (program: string): string[] => {
    const file = join(dir, 'tour.ts');
    writeFileSync(file, program);
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
    };
    const compiled = ts.createProgram([file], options);
    return ts
      .getPreEmitDiagnostics(compiled)
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'uhp-openapi-types-'));
    const ast = await openapiTS(DOCUMENT as Parameters<typeof openapiTS>[0]);
    writeFileSync(join(dir, 'api.d.ts'), astToString(ast));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the tour: its uploads, session, task and reads', () => {
    const calls = tourCalls(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(calls.map((call) => `${call.method} ${call.route}`)).toEqual(
      expect.arrayContaining(['post /v1/files', 'post /v1/sessions', 'post /v1/responses']),
    );
    expect(calls.find((call) => call.route === '/v1/responses')?.body).toBeDefined();
    expect(calls.flatMap((call) => call.reads)).toEqual(expect.arrayContaining(['.id', '.container_id']));
  });

  it('every body the README sends and every field it reads compile against the generated types', () => {
    const program = tourProgram(tourCalls(readFileSync(join(ROOT, 'README.md'), 'utf8')));
    expect(compile(program), program).toEqual([]);
  });

  it('a field the document does not have, or a body it does not take, does not compile', () => {
    const session = "paths['/v1/sessions']['post']";
    const errors = compile(
      [
        "import type { paths } from './api';",
        `declare const answer: ${session}['responses'][200]['content']['application/json'];`,
        'export const missing = answer.no_such_field;',
        "export const body: NonNullable<paths['/v1/responses']['post']['requestBody']>['content']['application/json']" +
          ' = { session_id: 7 };',
      ].join('\n'),
    );
    expect(errors.join('\n')).toMatch(/no_such_field/);
    expect(errors.join('\n')).toMatch(/input|number/);
  });
});
