import type { TemplatedApp } from 'uWebSockets.js';
import { methodNotAllowed, routeNotFound, toApiError } from '../errors/index.ts';
import { HttpExchange } from './http-exchange.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type RouteHandler = (ex: HttpExchange) => void | Promise<void>;

export interface Route {
  method: HttpMethod;
  /** uWS pattern, `:name` for a parameter (values arrive in `ex.params` in order). */
  pattern: string;
  /** Closed-set label for metrics (never contains ids). */
  name: string;
  handler: RouteHandler;
}

/** Called once per finished exchange (metrics, access log). */
export type ExchangeObserver = (ex: HttpExchange, routeName: string) => void;

/**
 * Mounts a route table on a uWS app. Each pattern is registered once with `any` and dispatched by method
 * here, so a known path with the wrong method is a 405 JSON error and an unknown path a 404 JSON error.
 * A handler's thrown error becomes the documented error body unless the response is already committed.
 */
export function mountRoutes(app: TemplatedApp, routes: readonly Route[], observe: ExchangeObserver): void {
  const byPattern = new Map<string, Route[]>();
  for (const r of routes) byPattern.set(r.pattern, [...(byPattern.get(r.pattern) ?? []), r]);

  // Hot path: a synchronous handler costs no promise and no closure here.
  const run = (ex: HttpExchange, name: string, handler: RouteHandler) => {
    let result: void | Promise<void>;
    try {
      result = handler(ex);
    } catch (err) {
      failExchange(ex, err);
      observe(ex, name);
      return;
    }
    ex.armAbort(); // still inside the uWS callback: no await has resumed yet
    if (result instanceof Promise) {
      result.then(
        () => observe(ex, name),
        (err: unknown) => {
          failExchange(ex, err);
          observe(ex, name);
        },
      );
    } else observe(ex, name);
  };

  for (const [pattern, group] of byPattern) {
    const paramCount = (pattern.match(/:/g) ?? []).length;
    const allowed = group.map((r) => r.method);
    app.any(pattern, (res, req) => {
      const ex = new HttpExchange(res, req, paramCount);
      const route = group.find((r) => r.method === ex.method) ?? (ex.method === 'HEAD' ? group.find((r) => r.method === 'GET') : undefined);
      if (!route) return run(ex, 'method_not_allowed', () => { throw methodNotAllowed(ex.method, ex.url, allowed); });
      run(ex, route.name, route.handler);
    });
  }
  app.any('/*', (res, req) => {
    const ex = new HttpExchange(res, req, 0);
    run(ex, 'not_found', () => { throw routeNotFound(ex.method, ex.url); });
  });
}

/** A handler's thrown error becomes the documented error body, or drops the connection once committed. */
function failExchange(ex: HttpExchange, err: unknown): void {
  const apiError = toApiError(err);
  if (!ex.isCommitted) ex.sendError(apiError);
  else ex.close();
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(authorization: string): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m?.[1];
}
