import type { AppHost } from './app-host.ts';
import { listView } from '../http/list-view.ts';
import type { ManagementAuthenticator } from '../accounts/authenticator.ts';
import { invalidRequest, unsupportedMediaType } from '../errors/index.ts';
import { sseData } from '../protocol/sse.ts';
import { AppExchange } from './app-exchange.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import type { HttpMethod, Route } from '../http/router.ts';
import type { SessionHttpOptions } from '../accounts/session-cookie.ts';

/**
 * The app API under /api/v1/workspaces/{workspaceId}/apps (contract "Applications on the Yam"),
 * authenticated like the rest of /api/v1 (an account API key, or a session cookie). Thin: authenticate, read the body the
 * route takes, call AppHost, send its view. A deployment is either a .tar.gz body (`application/gzip`,
 * at most the archive limit) or JSON {repository, ref?}: 202. `logs?follow=1` is an SSE stream of new
 * lines (`data: {time, stream, deploymentId, line}`), kept alive with comments until the client leaves.
 */
export interface AppRouteDeps {
  host: AppHost;
  /** The management authentication: an API key, or a session cookie (with its CSRF check). */
  auth: ManagementAuthenticator;
  session: SessionHttpOptions;
  bodyLimit: number;
  keepAliveMs: number;
}

interface Call {
  accountId: string;
  ws: string;
  appId: string;
  ex: AppExchange;
}

type Answer = { status: number; value: unknown } | null;

const GZIP_TYPES = ['application/gzip', 'application/x-gzip', 'application/x-tar+gzip', 'application/octet-stream'];
const MAX_LOG_LINES = 1000;

export function appRoutes(d: AppRouteDeps): Route[] {
  const h = d.host;
  const route = (
    method: HttpMethod,
    pattern: string,
    name: string,
    body: 'none' | 'json' | 'deployment',
    handle: (c: Call, body: unknown) => Answer | Promise<Answer>,
  ): Route => ({
    method,
    pattern,
    name,
    // The handler reads the body itself (its kind depends on the content type): run at once, synchronously.
    ...(body === 'none' ? {} : { body: { kind: 'handler' as const } }),
    handler: async (raw: HttpExchange) => {
      const ex = new AppExchange(raw);
      // Authenticated before any body is read: an anonymous upload is refused unread. Credentials unknown here may be
      // a moment old on another replica (fresh-credentials.ts): the upload is held, paused, while the records catch up.
      let principal = d.auth.authenticateFresh(ex.credentials(d.session));
      if (principal instanceof Promise) {
        raw.holdBody();
        principal = await principal;
      }
      const { accountId } = principal;
      let bodyPromise: Promise<unknown> = Promise.resolve(undefined);
      if (body === 'json') bodyPromise = ex.readJson(d.bodyLimit);
      else if (body === 'deployment') {
        const type = (ex.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
        if (GZIP_TYPES.includes(type)) bodyPromise = ex.readBody(h.archiveLimit);
        else if (type === 'application/json') bodyPromise = ex.readJson(d.bodyLimit);
        else throw unsupportedMediaType(type);
      }
      bodyPromise.catch(() => {});
      const answer = await handle({ accountId, ws: ex.params[0]!, appId: ex.params[1] ?? '', ex }, await bodyPromise);
      if (answer) ex.sendJson(answer.status, answer.value);
    },
  });
  const ok = (value: unknown): Answer => ({ status: 200, value });
  const APPS = '/api/v1/workspaces/:workspaceId/apps';
  const APP = `${APPS}/:appId`;

  return [
    route('POST', APPS, 'apps', 'json', async (c, b) => ({
      status: 201,
      value: await h.createApp(c.accountId, c.ws, b),
    })),
    route('GET', APPS, 'apps', 'none', (c) => ok(listView(h.listApps(c.accountId, c.ws)))),
    route('GET', APP, 'app', 'none', (c) => ok(h.getApp(c.accountId, c.ws, c.appId))),
    route('PATCH', APP, 'app', 'json', async (c, b) => ok(await h.updateApp(c.accountId, c.ws, c.appId, b))),
    route('DELETE', APP, 'app', 'none', async (c) => ok(await h.deleteApp(c.accountId, c.ws, c.appId))),
    route('POST', `${APP}/deployments`, 'app_deployments', 'deployment', async (c, b) => ({
      status: 202,
      value: Buffer.isBuffer(b)
        ? await h.deployArchive(c.accountId, c.ws, c.appId, b)
        : await h.deployRepository(c.accountId, c.ws, c.appId, b),
    })),
    route('GET', `${APP}/deployments`, 'app_deployments', 'none', (c) =>
      ok(listView(h.listDeployments(c.accountId, c.ws, c.appId))),
    ),
    route('GET', `${APP}/deployments/:deploymentId`, 'app_deployment', 'none', (c) =>
      ok(h.getDeployment(c.accountId, c.ws, c.appId, c.ex.params[2]!)),
    ),
    route('POST', `${APP}/rollback`, 'app_rollback', 'json', async (c, b) => ({
      status: 202,
      value: await h.rollback(c.accountId, c.ws, c.appId, b),
    })),
    route('POST', `${APP}/restart`, 'app_restart', 'none', async (c) =>
      ok(await h.restart(c.accountId, c.ws, c.appId)),
    ),
    route('GET', `${APP}/logs`, 'app_logs', 'none', (c) => {
      const linesParam = c.ex.query.get('lines');
      const lines = linesParam === null ? 100 : Number(linesParam);
      if (!Number.isInteger(lines) || lines < 0 || lines > MAX_LOG_LINES)
        throw invalidRequest(`'lines' must be an integer from 0 to ${MAX_LOG_LINES}`, 'lines', 'invalid_value');
      const follow = ['1', 'true'].includes(c.ex.query.get('follow') ?? '');
      if (!follow) return ok(listView(h.logs(c.accountId, c.ws, c.appId, lines)));
      const backlog = h.logs(c.accountId, c.ws, c.appId, lines);
      const writer = c.ex.sse(() => c.ex.close(), d.keepAliveMs);
      let unsubscribe: () => void = () => {};
      c.ex.onAbort(() => {
        unsubscribe();
        writer.dispose();
      });
      writer.write(': following\n\n');
      for (const l of backlog) writer.write(sseData(l));
      unsubscribe = h.followLogs(
        c.accountId,
        c.ws,
        c.appId,
        (l) => writer.write(sseData(l)),
        () => writer.end(),
      );
      writer.startKeepAlive();
      return null;
    }),
  ];
}
