import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppHost } from '../../src/apps/app-host.ts';
import { appProxyRoutes } from '../../src/apps/app-proxy-routes.ts';
import type { Route } from '../../src/http/router.ts';

/**
 * An app (an http server on a free 127.0.0.1 port, answering with `handler`) and the app proxy's routes to it: every
 * app id's target is that app; 1 MiB bodies, 5 s timeouts, plain http, no trusted proxy. The caller mounts the
 * routes and closes `app` when done.
 */
export async function appBehindProxy(handler: http.RequestListener): Promise<{ app: http.Server; routes: Route[] }> {
  const app = http.createServer(handler);
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  const port = (app.address() as AddressInfo).port;
  const host = { proxyTarget: () => ({ port }) } as unknown as AppHost;
  const routes = appProxyRoutes({
    host,
    bodyLimit: 1 << 20,
    headersTimeoutMs: 5000,
    idleTimeoutMs: 5000,
    proto: 'http',
    trustProxy: false,
  });
  return { app, routes };
}
