import uWS from 'uWebSockets.js';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { shuttingDown } from '../errors/index.ts';
import type { HttpExchange } from './http-exchange.ts';
import { mountRoutes, type Route, type RouteHandler } from './router.ts';

export interface HttpServerOptions {
  host: string;
  port: number;
  routes: readonly Route[];
  metrics: Metrics;
  log: Logger;
}

export interface RunningHttpServer {
  /** The bound port (useful with port 0). */
  port: number;
  /**
   * Stops accepting connections; a request that still arrives on an open connection is answered 503
   * shutting_down. Idempotent. In-flight responses finish on their own.
   */
  close(): void;
  /** Requests whose handler has not finished yet (a running stream counts until its last byte). */
  inFlight(): number;
  /** Closes every connection at once, in-flight ones included (their exchanges see the abort). Idempotent. */
  closeConnections(): void;
}

/** Builds the uWS app from a route table and starts listening. Rejects when the port cannot be bound. */
export function startHttpServer(o: HttpServerOptions): Promise<RunningHttpServer> {
  const app = uWS.App();
  // Bound metric children per (route, status): label resolution once, not per request.
  const children = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();
  const observe = (ex: HttpExchange, route: string) => {
    const status = ex.aborted && ex.status === 0 ? 499 : ex.status;
    const key = `${route} ${status}`;
    let child = children.get(key);
    if (child === undefined) {
      child = {
        count: o.metrics.httpRequests.labels({ route, status: String(status) }),
        duration: o.metrics.httpDuration.labels({ route, status_class: `${String(status)[0]}xx` }),
      };
      children.set(key, child);
    }
    child.count.inc();
    child.duration.observe((performance.now() - ex.startedAt) / 1000);
    if (ex.errorCode !== null) o.metrics.errors.inc({ route, code: ex.errorCode });
    // One line per request, carrying the x-request-id sent back: successes at debug, 4xx at info, 5xx at warn.
    const level = status >= 500 ? 'warn' : status >= 400 ? 'info' : 'debug';
    o.log[level]('request', { request_id: ex.requestId, method: ex.method, route, status, code: ex.errorCode ?? undefined, ms: Math.round(performance.now() - ex.startedAt) });
  };
  let inFlight = 0;
  let accepting = true;
  // Every route's handler counted while it runs, so shutdown knows when the last response is done.
  const counted = (handler: RouteHandler): RouteHandler => (ex) => {
    if (!accepting) throw shuttingDown();
    inFlight++;
    let result: void | Promise<void>;
    try {
      result = handler(ex);
    } catch (err) {
      inFlight--;
      throw err;
    }
    if (result instanceof Promise) return result.finally(() => { inFlight--; });
    inFlight--;
  };
  mountRoutes(app, o.routes.map((r) => ({ ...r, handler: counted(r.handler) })), observe);
  return new Promise((resolve, reject) => {
    app.listen(o.host, o.port, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${o.host}:${o.port} (address in use or not permitted)`));
      let open = true;
      let connectionsClosed = false;
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => {
          accepting = false;
          if (!open) return;
          open = false;
          uWS.us_listen_socket_close(socket);
        },
        inFlight: () => inFlight,
        closeConnections: () => {
          accepting = false;
          if (connectionsClosed) return;
          connectionsClosed = true;
          open = false;
          // uWS's App.close() (present at runtime, missing from its typings): closes the listen socket and every connection.
          (app as unknown as { close(): void }).close();
        },
      });
    });
  });
}
