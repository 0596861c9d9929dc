import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ArchivesController } from '../archives/archives.controller';
import { ContainersController } from '../containers/containers.controller';
import { FilesController } from '../files/files.controller';
import { LimitsController } from '../limits/limits.controller';
import { PreviewsController } from '../previews/previews.controller';
import { ResponsesController } from '../responses/responses.controller';
import { SessionsController } from '../sessions/sessions.controller';
import { TusController } from '../tus/tus.controller';
import { UploadsController } from '../uploads/openai/uploads.controller';
import { API_DOC_PATH, renderApiDoc } from './api-docs';
import { OPENAPI_DOCUMENT } from './openapi.document';

const API_CONTROLLERS = [
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

/** `v1/files` + `:id/content` → `GET /v1/files/{}/content`: a route with its parameters unnamed. */
const normalise = (method: string, path: string) =>
  `${method.toUpperCase()} /${path.replace(/^\/+/, '').replace(/:\w+|\{\w+\}/g, '{}')}`;

function servedRoutes(): string[] {
  const routes: string[] = [];
  for (const controller of API_CONTROLLERS) {
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
  return routes.sort();
}

function documentedRoutes(): string[] {
  return Object.entries(OPENAPI_DOCUMENT.paths)
    .flatMap(([path, item]) => Object.keys(item).map((method) => normalise(method, path)))
    .sort();
}

describe('docs/api.md and /openapi.json', () => {
  it('document exactly the routes the gateway serves', () => {
    expect(servedRoutes().length).toBeGreaterThan(20);
    expect(documentedRoutes()).toEqual(servedRoutes());
  });

  it("docs/api.md's generated error and route tables are current (else run npm run docs:api)", () => {
    const text = readFileSync(API_DOC_PATH, 'utf8');
    expect(renderApiDoc(text)).toBe(text);
  });
});
