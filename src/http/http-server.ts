import { randomBytes } from 'node:crypto';
import type { us_listen_socket, us_socket } from 'uWebSockets.js';
import { uWS } from './uws.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { shuttingDown } from '../errors/index.ts';
import type { EdgeStyle, HttpExchange } from './http-exchange.ts';
import { locateHaproxy, type ManagedFront, startManagedFront } from '../front/haproxy-front.ts';
import { mountRoutes, OPENAI_STYLE, type Route, type RouteHandler } from './router.ts';

/** `--front`: HAProxy in front of uWS (haproxy-front.ts); auto = when HAProxy 2.6+ is installed. */
export type FrontMode = 'auto' | 'haproxy' | 'off';

export interface HttpServerOptions {
  host: string;
  port: number;
  routes: readonly Route[];
  metrics: Metrics;
  log: Logger;
  /** Absent = off. */
  front?: FrontMode;
  /** Largest body any route accepts (the front refuses larger declared bodies before Hearth sees them). */
  bodyLimit?: number;
  /** Headers added to an error answer (the dashboard's: a `session_expired` answer clears the session cookie). */
  errorHeaders?: EdgeStyle['errorHeaders'];
}

export interface RunningHttpServer {
  /** The bound port (useful with port 0). */
  port: number;
  /** What parses HTTP on the public socket: HAProxy in front of uWS, or uWS alone. */
  front: 'haproxy' | 'none';
  /**
   * Stops accepting connections; a request that still arrives on an open connection is answered 503
   * shutting_down. Idempotent. In-flight responses finish on their own.
   */
  close(): void;
  /** Requests whose handler has not finished yet (a running stream counts until its last byte). */
  inFlight(): number;
  /** Closes every connection at once, in-flight ones included (their exchanges see the abort). Idempotent. */
  closeConnections(): void | Promise<void>;
}

/**
 * Starts Hearth's HTTP edge on host:port: uWS alone, or (front auto / haproxy) uWS on a loopback port behind the
 * managed HAProxy front. Rejects when the port cannot be bound, or with front haproxy when HAProxy is missing.
 */
export async function startHttpServer(o: HttpServerOptions): Promise<RunningHttpServer> {
  const mode = o.front ?? 'off';
  const haproxy = mode === 'off' ? null : locateHaproxy();
  if (haproxy !== null && 'missing' in haproxy) {
    if (mode === 'haproxy') throw new Error(`--front haproxy: ${haproxy.missing}`);
    o.log.warn(
      'no HTTP front: uWS parses HTTP alone (malformed framing is closed without an answer, a request pipelined behind a running one is refused); install HAProxy or pass --front off to silence this',
      { reason: haproxy.missing },
    );
  }
  if (haproxy === null || 'missing' in haproxy) return listenUws(o, { host: o.host, port: o.port });

  // uWS on an ephemeral loopback port (TCP, not a unix socket: the kernel's loopback buffers absorb a fast stream's
  // bursts as they did with clients connected directly); the front proves itself with a per-start secret.
  const secret = randomBytes(32).toString('hex');
  const uws = await listenUws(o, { host: '127.0.0.1', port: 0 }, Buffer.from(secret));
  let front: ManagedFront;
  try {
    front = await startManagedFront({
      haproxy,
      host: o.host,
      port: o.port,
      backend: `127.0.0.1:${uws.port}`,
      secret,
      bodyLimit: o.bodyLimit ?? MAX_BODY_DEFAULT,
      log: o.log,
    });
  } catch (err) {
    uws.closeConnections();
    throw err;
  }
  o.log.info('HTTP front: haproxy', { version: haproxy.version, port: front.port });
  return {
    port: front.port,
    front: 'haproxy',
    inFlight: uws.inFlight,
    close: () => {
      // The front stops accepting; uWS keeps its loopback port, so a request that still arrives on a client's open
      // connection reaches Hearth and gets its 503 shutting_down (not the front's "not reachable").
      front.stopAccepting();
      uws.refuseRequests();
    },
    closeConnections: async () => {
      // After the drain: let the front deliver what it still holds to slow readers (each finished exchange closes
      // its Hearth connection, then the soft-stopped front exits by itself), then cut whatever is left.
      front.stopAccepting(); // already, after close(); not when a failed start releases what it opened
      await front.exited(FRONT_FLUSH_MS);
      uws.closeConnections();
      await front.close();
    },
  };
}

/** HttpServerOptions.bodyLimit when absent. */
const MAX_BODY_DEFAULT = 50 << 20;

/** How long shutdown lets the soft-stopped front finish delivering answers before its connections are cut. */
const FRONT_FLUSH_MS = 3_000;

/** Builds the uWS app from a route table and listens on host:port; `frontSecret` = behind the managed front. */
function listenUws(
  o: HttpServerOptions,
  at: { host: string; port: number },
  frontSecret?: Buffer,
): Promise<RunningHttpServer & { refuseRequests(): void }> {
  const app = uWS.App();
  // Bound metric children per (route, status): label resolution once, not per request.
  const children = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();
  const observe = (ex: HttpExchange, route: string) => {
    const status = ex.aborted && ex.status === 0 ? 499 : ex.status;
    const key = `${route} ${status}`;
    let child = children.get(key);
    if (child === undefined) {
      child = {
        count: o.metrics.httpRequests.bind({ route, status: String(status) }),
        duration: o.metrics.httpDuration.bind({ route, status_class: `${String(status)[0]}xx` }),
      };
      children.set(key, child);
    }
    child.count.inc();
    child.duration.observe((performance.now() - ex.startedAt) / 1000);
    if (ex.errorCode !== null) o.metrics.errors.inc({ route, code: ex.errorCode });
    // One line per request, carrying the x-request-id sent back: successes at debug, 4xx at info, 5xx at warn.
    // GET /health at debug whatever it answers: its 503 is the model's state (warming up, failed), which the
    // model's own lines log, and probes (the front's at start, load balancers') poll it.
    const level = route === 'health' ? 'debug' : status >= 500 ? 'warn' : status >= 400 ? 'info' : 'debug';
    o.log[level]('request', {
      request_id: ex.requestId,
      method: ex.method,
      route,
      status,
      code: ex.errorCode ?? undefined,
      ms: Math.round(performance.now() - ex.startedAt),
    });
  };
  let inFlight = 0;
  let accepting = true;
  // Every route's handler counted while it runs, so shutdown knows when the last response is done.
  const counted =
    (handler: RouteHandler): RouteHandler =>
    (ex) => {
      if (!accepting) throw shuttingDown();
      inFlight++;
      let result: void | Promise<void>;
      try {
        result = handler(ex);
      } catch (err) {
        inFlight--;
        throw err;
      }
      if (result instanceof Promise)
        return result.finally(() => {
          inFlight--;
        });
      inFlight--;
    };
  // Bodies up to the largest route limit are read to their end before an answer (HttpExchange.send).
  const style = {
    ...OPENAI_STYLE,
    drainLimit: o.bodyLimit ?? MAX_BODY_DEFAULT,
    ...(frontSecret === undefined ? {} : { frontSecret }),
    ...(o.errorHeaders === undefined ? {} : { errorHeaders: o.errorHeaders }),
  };
  mountRoutes(
    app,
    o.routes.map((r) => ({ ...r, handler: counted(r.handler) })),
    observe,
    style,
  );
  return new Promise((resolve, reject) => {
    const listening = (socket: us_listen_socket | false) => {
      if (!socket) return reject(new Error(`cannot listen on ${at.host}:${at.port} (address in use or not permitted)`));
      let open = true;
      let connectionsClosed = false;
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as us_socket),
        front: 'none',
        refuseRequests: () => {
          accepting = false;
        },
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
    };
    app.listen(at.host, at.port, listening);
  });
}
