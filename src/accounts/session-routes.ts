import type { AccountService, StartedSession } from './account-service.ts';
import { whenReady } from './fresh-credentials.ts';
import { originMismatch } from '../errors/index.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import type { Route } from '../http/router.ts';
import {
  clearedSessionCookie,
  clientAddress,
  isSameOrigin,
  readSessionCookies,
  type SessionHttpOptions,
  sessionCookie,
} from './session-cookie.ts';

export interface SessionRouteDeps {
  accounts: AccountService;
  session: SessionHttpOptions;
  bodyLimit: number;
}

/**
 * First-run setup and dashboard sessions: GET|POST /api/v1/setup, POST|DELETE /api/v1/session (GET, who am I,
 * is a management route: it authenticates like them).
 * Signing in (and setup, which signs the new owner in) answers with the `hearth_session` cookie. A sign-in
 * or setup POST that carries a foreign Origin is refused (403 origin_mismatch: no sign-in forced on a
 * browser by another site); one without Origin (curl, scripts) is accepted.
 */
export function sessionRoutes(d: SessionRouteDeps): Route[] {
  const refuseForeignOrigin = (ex: HttpExchange) => {
    if (ex.origin !== '' && !isSameOrigin(ex, d.session)) throw originMismatch();
  };
  const setCookie = (ex: HttpExchange, started: StartedSession): [string, string] => [
    'set-cookie',
    sessionCookie(ex, d.session, started.token),
  ];

  return [
    {
      method: 'GET',
      pattern: '/api/v1/setup',
      name: 'setup',
      handler: (ex) => whenReady(d.accounts.setupStatus(), (status) => ex.sendJson(200, status)),
    },
    {
      method: 'POST',
      pattern: '/api/v1/setup',
      name: 'setup',
      body: { kind: 'json', limit: d.bodyLimit },
      handler: async (ex) => {
        refuseForeignOrigin(ex);
        const started = await d.accounts.setup(await ex.json());
        ex.sendJson(201, { user: started.user }, [setCookie(ex, started), ['cache-control', 'no-store']]);
      },
    },
    {
      method: 'POST',
      pattern: '/api/v1/session',
      name: 'session',
      body: { kind: 'json', limit: d.bodyLimit },
      handler: async (ex) => {
        const address = clientAddress(ex, d.session); // before any await
        refuseForeignOrigin(ex);
        const started = await d.accounts.signIn(await ex.json(), address);
        ex.send(204, '', [setCookie(ex, started), ['cache-control', 'no-store']]);
      },
    },
    {
      method: 'DELETE',
      pattern: '/api/v1/session',
      name: 'session',
      handler: async (ex) => {
        const tokens = readSessionCookies(ex.cookie);
        if (tokens.length > 0 && !isSameOrigin(ex, d.session)) throw originMismatch();
        await d.accounts.signOut(tokens);
        ex.send(204, '', [['set-cookie', clearedSessionCookie(ex, d.session)]]);
      },
    },
  ];
}
