import { RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { compileErrors, validate } from '@readme/openapi-parser';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '@app/contracts';
import { CORS_METHODS } from '../http/cors.middleware';
import { jsonBodyRoutes } from '../http/json-body.decorator';
import { API_CONTROLLERS, defaultLimits, GENERATED_DOCS, REGENERATE, REPOSITORY_ROOT } from './api-docs';
import { OpenApiController } from './openapi.controller';
import { OPENAPI_DOCUMENT } from './openapi.document';

/** Served beside the API by libs/common's HealthModule and MetricsModule (/metrics only with UHP_API_METRICS). */
const OPERATIONS_ROUTES = ['GET /healthz', 'GET /readyz', 'GET /metrics'];
/** The rendered reference's own script: part of /docs, not an API. */
const DOCS_ASSETS = /^GET \/docs\/assets\//;

/** `v1/files` + `:id/content` → `GET /v1/files/{}/content`: a route with its parameters unnamed. */
const normalise = (method: string, path: string) =>
  `${method.toUpperCase()} /${path.replace(/^\/+/, '').replace(/:\w+|\{\w+\}/g, '{}')}`;

function routesOf(controllers: Type[]): string[] {
  const routes: string[] = [];
  for (const controller of controllers) {
    const base = Reflect.getMetadata(PATH_METADATA, controller) as string;
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler: unknown = Reflect.get(controller.prototype, name);
      if (typeof handler !== 'function') continue;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (path === undefined || method === undefined) continue;
      routes.push(normalise(RequestMethod[method], [base, path].filter((part) => part && part !== '/').join('/')));
    }
  }
  return routes;
}

/** Every route the gateway answers: its controllers', and OPTIONS on each /v1 path (CorsMiddleware answers it). */
function servedRoutes(): string[] {
  const routes = [...routesOf([...API_CONTROLLERS, OpenApiController]), ...OPERATIONS_ROUTES].filter(
    (route) => !DOCS_ASSETS.test(route),
  );
  const v1Paths = new Set(routes.map((route) => route.split(' ')[1]).filter((path) => path.startsWith('/v1/')));
  return [...new Set([...routes, ...[...v1Paths].map((path) => `OPTIONS ${path}`)])].sort();
}

type Operations = Record<string, Record<string, { responses: Record<string, unknown> }>>;
const paths = OPENAPI_DOCUMENT.paths as unknown as Operations;

function documentedRoutes(): string[] {
  return Object.entries(paths)
    .flatMap(([path, item]) => Object.keys(item).map((method) => normalise(method, path)))
    .sort();
}

const operationOf = (route: string) => {
  const [method] = route.split(' ');
  const entry = Object.entries(paths).find(([documented]) => normalise(method, documented) === route);
  return entry?.[1][method.toLowerCase()];
};

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
}
/** The field paths of a value, or of a JSON schema's properties: `preview.formats`, … */
const fieldsOfValue = (value: Record<string, unknown>, prefix = ''): string[] =>
  Object.entries(value).flatMap(([name, field]) =>
    field && typeof field === 'object' && !Array.isArray(field)
      ? fieldsOfValue(field as Record<string, unknown>, `${prefix}${name}.`)
      : [`${prefix}${name}`],
  );
const fieldsOfSchema = (schema: SchemaNode, prefix = ''): string[] =>
  Object.entries(schema.properties ?? {}).flatMap(([name, field]) =>
    field.properties ? fieldsOfSchema(field, `${prefix}${name}.`) : [`${prefix}${name}`],
  );

describe('/openapi.json and the docs generated from the code', () => {
  it('documents exactly the routes the gateway serves, HEAD and OPTIONS included', () => {
    expect(servedRoutes().length).toBeGreaterThan(40);
    expect(servedRoutes()).toContain('HEAD /v1/tus/{}');
    expect(CORS_METHODS).toEqual(expect.arrayContaining(['HEAD', 'OPTIONS']));
    expect(documentedRoutes()).toEqual(servedRoutes());
  });

  it('answers every error code on some route, with its status described', () => {
    const statuses = new Set(
      Object.values(paths)
        .flatMap((item) => Object.values(item))
        .flatMap((op) => Object.keys(op.responses)),
    );
    const missing = Object.entries(ERROR_CODES)
      .filter(([, entry]) => !statuses.has(String(entry.status)))
      .map(([code]) => code);
    expect(missing).toEqual([]);
    const described = Object.keys(OPENAPI_DOCUMENT.components.responses);
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(described).toContain(`Error${entry.status}`);
      expect(JSON.stringify(OPENAPI_DOCUMENT.components.responses)).toContain(`${code}:`);
    }
  });

  it('gives every route that reads a JSON body the answers of a bad, large or non-JSON body', () => {
    const routes = jsonBodyRoutes(API_CONTROLLERS).map((route) => normalise(RequestMethod[route.method], route.path));
    expect(routes.length).toBeGreaterThan(5);
    for (const route of routes)
      expect(Object.keys(operationOf(route)?.responses ?? {}), route).toEqual(
        expect.arrayContaining(['400', '413', '415']),
      );
  });

  it('describes exactly the fields GET /v1/limits serves', () => {
    const schema = (OPENAPI_DOCUMENT.components.schemas as unknown as Record<string, SchemaNode>).Limits;
    expect(fieldsOfSchema(schema).sort()).toEqual(fieldsOfValue(defaultLimits()).sort());
  });

  it('is a valid OpenAPI 3.1 document, as exported to docs/openapi.json', async () => {
    const exported = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'docs/openapi.json'), 'utf8')) as Exclude<
      Parameters<typeof validate>[0],
      string
    >;
    expect((exported as { openapi?: string }).openapi).toBe('3.1.0');
    const result = await validate(exported);
    expect(result.valid ? '' : compileErrors(result)).toBe('');
  });

  for (const file of Object.keys(GENERATED_DOCS).filter((name) => name !== 'docs/configuration.md'))
    it(`${file} is current (else run ${REGENERATE})`, () => {
      const committed = readFileSync(join(REPOSITORY_ROOT, file), 'utf8');
      expect(GENERATED_DOCS[file](committed), `${file} is stale: run ${REGENERATE}`).toBe(committed);
    });
});
