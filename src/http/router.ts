import type { TemplatedApp } from 'uWebSockets.js';
import {
  type ApiError,
  malformedPath,
  methodNotAllowed,
  nonAsciiHeader,
  payloadTooLarge,
  routeNotFound,
  toApiError,
} from '../errors/index.ts';
import { type BodySpec, ClientGoneError, type EdgeStyle, HttpExchange } from './http-exchange.ts';
import { REQUEST_LIMITS } from './request-limits.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type RouteHandler = (ex: HttpExchange) => void | Promise<void>;

export interface Route {
  method: HttpMethod;
  /** uWS pattern, `:name` for a parameter (decoded values arrive in `ex.params` in order), `*` for a tail. */
  pattern: string;
  /** Closed-set label for metrics (never contains ids). */
  name: string;
  /**
   * The body this route reads; none when absent. The router starts reading it before the handler runs, so
   * the handler can check credentials first and then `await ex.json()` / `ex.bytes()`.
   */
  body?: BodySpec;
  /**
   * The JSON value of this route's error answers when it speaks another API than the edge (the Anthropic
   * Messages API); absent: the edge's style. Routes sharing a pattern share it (its 405 is in that shape too).
   */
  errorBody?: (err: ApiError) => unknown;
  handler: RouteHandler;
}

/** Called once per finished exchange (metrics, access log). */
export type ExchangeObserver = (ex: HttpExchange, routeName: string) => void;

/** The service's style: JSON answers, errors in OpenAI's shape `{"error":{"message","type","param","code"}}`. */
export const OPENAI_STYLE: EdgeStyle = {
  jsonHeaders: [['content-type', 'application/json']],
  errorBody: (err: ApiError) => err.toBody(),
};

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Mounts a route table on a uWS app: the one router of Hearth's HTTP edges (service and tool-server kit).
 * Each pattern is registered once with `any` and dispatched by method here, so a known path with the wrong
 * method is a 405 and an unknown path a 404, in the edge's error shape (below a route of another API: in its). HEAD runs the GET handler and
 * answers without a body. A header value that is not ASCII text is a 400 before any handler runs. Everything
 * derived from the request (percent-decoding, bounds, the body) is handled in this guarded path: a thrown
 * error becomes the error answer unless the response is committed.
 * A handler of an unsafe method without a body runs one event-loop turn later, and only if the client is
 * still there (see HttpExchange.readBody for why; bodies get the same treatment there).
 */
export function mountRoutes(
  app: TemplatedApp,
  routes: readonly Route[],
  observe: ExchangeObserver,
  style: EdgeStyle = OPENAI_STYLE,
): void {
  const byPattern = new Map<string, Route[]>();
  for (const r of routes) byPattern.set(r.pattern, [...(byPattern.get(r.pattern) ?? []), r]);

  // The error answer: it waits for a body still arriving (HttpExchange.send); drainBody is a no-op once one is read.
  const fail = (ex: HttpExchange, name: string, err: unknown) => {
    ex.drainBody();
    failExchange(ex, err);
    observe(ex, name);
  };

  // Hot path: a synchronous handler costs no promise and no closure here.
  const run = (ex: HttpExchange, name: string, handler: RouteHandler) => {
    let result: void | Promise<void>;
    try {
      result = handler(ex);
    } catch (err) {
      return fail(ex, name, err);
    }
    ex.armAbort(); // still inside the uWS callback (or a turn later with abort already armed)
    ex.drainBody(); // a body the handler did not start streaming synchronously will never be read: drop it, answer after
    if (result instanceof Promise) {
      result.then(
        () => observe(ex, name),
        (err: unknown) => fail(ex, name, err),
      );
    } else observe(ex, name);
  };

  for (const [pattern, group] of byPattern) {
    const paramCount = (pattern.match(/:/g) ?? []).length;
    const allowed = group.map((r) => r.method);
    const errorBody = group.find((r) => r.errorBody)?.errorBody;
    const groupStyle: EdgeStyle = errorBody ? { ...style, errorBody } : style;
    app.any(pattern, (res, req) => {
      const ex = new HttpExchange(res, req, groupStyle, paramCount);
      const route =
        group.find((r) => r.method === ex.method) ?? (ex.isHead ? group.find((r) => r.method === 'GET') : undefined);
      if (!route) return fail(ex, 'method_not_allowed', methodNotAllowed(ex.method, clip(ex.url), allowed));
      try {
        const changedHeader = ex.nonAsciiHeader;
        if (changedHeader !== undefined) throw nonAsciiHeader(changedHeader);
        ex.params = decodeParams(ex);
        if (route.body && route.body.kind !== 'handler') {
          // A declared length over the limit is refused from the head alone, before credentials (at once without the
          // front; behind it the 413 waits for the body, or for it to stall: HttpExchange.send).
          const declared = ex.contentLength;
          if (declared !== undefined && declared > route.body.limit) throw payloadTooLarge(route.body.limit);
          void ex.readBody(route.body.limit); // synchronously: uWS drops data without a listener
        } else if (!route.body) ex.drainBody(); // a body the route does not take: read and dropped before the answer
      } catch (err) {
        return fail(ex, route.name, err);
      }
      if (route.body || SAFE_METHODS.has(ex.method)) return run(ex, route.name, route.handler);
      ex.armAbort();
      setImmediate(() => (ex.aborted ? observe(ex, route.name) : run(ex, route.name, route.handler)));
    });
    // A path under a route of another API (the Messages API's /messages/batches) is its 404, in its shape.
    if (errorBody && !pattern.endsWith('*')) {
      app.any(`${pattern}/*`, (res, req) => {
        const ex = new HttpExchange(res, req, groupStyle, 0);
        fail(ex, 'not_found', routeNotFound(ex.method, clip(ex.url)));
      });
    }
  }
  app.any('/*', (res, req) => {
    const ex = new HttpExchange(res, req, style, 0);
    fail(ex, 'not_found', routeNotFound(ex.method, clip(ex.url)));
  });
}

/** A request path as echoed in an error message: at most 200 characters. */
function clip(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}...` : path;
}

/** Percent-decodes the path parameters: 400 `invalid_path` for a malformed escape, 404 for an over-long one. */
function decodeParams(ex: HttpExchange): string[] {
  const out: string[] = [];
  for (const raw of ex.rawParams) {
    if (raw.length > REQUEST_LIMITS.maxPathParamLength) throw routeNotFound(ex.method, clip(ex.url));
    try {
      out.push(decodeURIComponent(raw));
    } catch {
      throw malformedPath();
    }
  }
  return out;
}

/** A handler's thrown error becomes the edge's error body, or drops the connection once committed. */
function failExchange(ex: HttpExchange, err: unknown): void {
  if (ex.aborted || err instanceof ClientGoneError) return; // nobody to answer
  const apiError = toApiError(err);
  if (!ex.isCommitted) ex.sendError(apiError);
  else ex.close();
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(authorization: string): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return m?.[1];
}
