import { RequestMethod, SetMetadata, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';

const JSON_BODY = Symbol('uhp:json-body');

/** A route as the middleware consumer takes it. */
export interface RouteInfo {
  path: string;
  method: RequestMethod;
}

/** The route takes a JSON body: JsonBodyMiddleware reads it, up to max_request_bytes, before the handler runs. */
export const JsonBody = (): MethodDecorator => SetMetadata(JSON_BODY, true);

const joinPaths = (...parts: Array<string | undefined>) =>
  parts
    .map((part) => (part ?? '').replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/');

/** The routes of these controllers whose handler is marked `@JsonBody()`, for the middleware consumer. */
export function jsonBodyRoutes(controllers: Type[]): RouteInfo[] {
  const routes: RouteInfo[] = [];
  for (const controller of controllers) {
    const prefixes = [Reflect.getMetadata(PATH_METADATA, controller) as string | string[] | undefined].flat();
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, unknown>)[name];
      if (typeof handler !== 'function' || !Reflect.getMetadata(JSON_BODY, handler)) continue;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod;
      for (const path of [Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined].flat())
        for (const prefix of prefixes) routes.push({ path: joinPaths(prefix, path), method });
    }
  }
  return routes;
}
