import { whenReady } from './fresh-credentials.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import { bearerToken, type HttpMethod, type Route } from '../http/router.ts';
import type { ManagementAuthenticator, Principal, PresentedCredentials } from './authenticator.ts';
import { isSameOrigin, readSessionCookies, type SessionHttpOptions } from './session-cookie.ts';

/** What every authenticated /api/v1 route builder needs. */
export interface AuthenticatedRouteDeps {
  auth: ManagementAuthenticator;
  session: SessionHttpOptions;
  bodyLimit: number;
}

/** What a management handler gets: the caller (its account), the path parameters and (for writes) the JSON body. */
export interface ManagementCall {
  accountId: string;
  principal: Principal;
  params: string[];
  body: unknown;
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The credentials of a request, read from what the exchange captured synchronously. */
export function presentedCredentials(ex: HttpExchange, session: SessionHttpOptions): PresentedCredentials {
  const sessionTokens = readSessionCookies(ex.cookie);
  return {
    authorization: ex.authorization,
    bearer: bearerToken(ex.authorization),
    sessionTokens,
    changes: CHANGES.has(ex.method),
    sameOrigin: sessionTokens.length > 0 && isSameOrigin(ex, session),
  };
}

export type Answer = { status: number; value: unknown };

/**
 * The route builder of the management API under /api/v1, authenticated with an account API key (Bearer) or
 * a session cookie (ManagementAuthenticator: CSRF check included). Handlers are thin: authenticate, read the
 * body when the route takes one, call a service, send its view. Answers: `created` 201, `ok` 200; errors per
 * docs/management-api.md (an ended session's 401 also clears the cookie, at the edge: sessionErrorHeaders).
 */
export function authenticatedRoutes(d: AuthenticatedRouteDeps) {
  const send = (ex: HttpExchange, answer: Answer) => ex.sendJson(answer.status, answer.value);
  /** The caller, or the 401/403 (the edge clears the cookie of an ended session: sessionErrorHeaders). */
  const authenticate = (ex: HttpExchange): Principal | Promise<Principal> =>
    d.auth.authenticateFresh(presentedCredentials(ex, d.session));
  const route = (
    method: HttpMethod,
    pattern: string,
    name: string,
    takesBody: boolean,
    handle: (c: ManagementCall) => Answer | Promise<Answer>,
  ): Route => ({
    method,
    pattern,
    name,
    ...(takesBody ? { body: { kind: 'json' as const, limit: d.bodyLimit } } : {}),
    // A read answers synchronously where it can (LMDB: no promise), so kept-alive and pipelined GETs are answered in
    // order without a front; on PostgreSQL it first waits for the records to be current (authenticateFresh).
    handler: takesBody
      ? async (ex: HttpExchange) => {
          const principal = await authenticate(ex);
          send(
            ex,
            await handle({ accountId: principal.accountId, principal, params: ex.params, body: await ex.json() }),
          );
        }
      : (ex: HttpExchange) =>
          whenReady(authenticate(ex), (principal) => {
            const answer = handle({ accountId: principal.accountId, principal, params: ex.params, body: undefined });
            if (answer instanceof Promise) return answer.then((a) => send(ex, a));
            send(ex, answer);
          }),
  });
  const ok = (value: unknown): Answer => ({ status: 200, value });
  const created = (value: unknown): Answer => ({ status: 201, value });
  return { route, ok, created };
}
