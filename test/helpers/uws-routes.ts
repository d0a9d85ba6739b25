import type { us_listen_socket, us_socket } from 'uWebSockets.js';
import { uWS } from '../../src/http/uws.ts';
import type { EdgeStyle } from '../../src/http/http-exchange.ts';
import { mountRoutes, type Route } from '../../src/http/router.ts';
import { type HttpServerOptions, type RunningHttpServer, startHttpServer } from '../../src/http/http-server.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';

/** The router on a bare uWS app listening on a free loopback port (no metrics, no front). `close()` stops listening. */
export async function listenRoutes(
  routes: readonly Route[],
  style?: EdgeStyle,
): Promise<{ port: number; close(): void }> {
  const app = uWS.App();
  mountRoutes(app, routes, () => {}, ...(style === undefined ? [] : [style]));
  const socket = await new Promise<us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('cannot listen on 127.0.0.1')))),
  );
  return {
    port: uWS.us_socket_local_port(socket as unknown as us_socket),
    close: () => uWS.us_listen_socket_close(socket),
  };
}

/** `size` bytes of a fixed pattern (no randomness: a failing test reproduces); different `seed`s differ. */
export function patternBytes(size: number, seed = 31): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * seed + (i >> 8)) & 0xff;
  return b;
}

/** Hearth's HTTP server (http-server.ts) with `routes` on a free loopback port: no front, fresh metrics, a silent log. */
export function startLoopbackServer(
  routes: readonly Route[],
  options: Partial<HttpServerOptions> = {},
): Promise<RunningHttpServer> {
  return startHttpServer({
    host: '127.0.0.1',
    port: 0,
    routes,
    metrics: createMetrics({ defaultMetrics: false }),
    log: silentLogger,
    ...options,
  });
}
