import type { AccountService } from '../../gateway/account-service.ts';
import type { ManagementAuthenticator, Principal, PresentedCredentials } from '../../gateway/authenticator.ts';
import type { ManagementService } from '../../gateway/management-service.ts';
import type { ServingStats } from '../../gateway/serving-stats.ts';
import type { HttpExchange } from '../http-exchange.ts';
import { bearerToken, type HttpMethod, type Route } from '../router.ts';
import { isSameOrigin, readSessionCookie, type SessionHttpOptions } from '../session-cookie.ts';

export interface ManagementRouteDeps {
  management: ManagementService;
  accounts: AccountService;
  auth: ManagementAuthenticator;
  stats: ServingStats;
  session: SessionHttpOptions;
  bodyLimit: number;
}

/** What a management handler gets: the caller (its account), the path parameters and (for writes) the JSON body. */
interface ManagementCall {
  accountId: string;
  principal: Principal;
  params: string[];
  body: unknown;
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The credentials of a request, read from what the exchange captured synchronously. */
export function presentedCredentials(ex: HttpExchange, session: SessionHttpOptions): PresentedCredentials {
  const sessionToken = readSessionCookie(ex.cookie);
  return {
    authorization: ex.authorization,
    bearer: bearerToken(ex.authorization),
    sessionToken,
    changes: CHANGES.has(ex.method),
    sameOrigin: sessionToken !== undefined && isSameOrigin(ex, session),
  };
}

type Answer = { status: number; value: unknown };

/**
 * The management API under /api/v1, authenticated with an account API key (Bearer) or a session cookie
 * (ManagementAuthenticator: CSRF check included). Handlers are thin: authenticate, read the body when the
 * route takes one, call ManagementService / AccountService, send its view. Answers: 201 for a creation
 * (and for PUT .../yam when it started a Yam), 200 otherwise; errors per README (an ended session's 401
 * also clears the cookie, at the edge: sessionErrorHeaders).
 */
export function managementRoutes(d: ManagementRouteDeps): Route[] {
  const m = d.management;
  const send = (ex: HttpExchange, answer: Answer) => ex.sendJson(answer.status, answer.value);
  /** The caller, or the 401/403 (the edge clears the cookie of an ended session: sessionErrorHeaders). */
  const authenticate = (ex: HttpExchange): Principal => d.auth.authenticate(presentedCredentials(ex, d.session));
  const route = (method: HttpMethod, pattern: string, name: string, takesBody: boolean, handle: (c: ManagementCall) => Answer | Promise<Answer>): Route => ({
    method,
    pattern,
    name,
    ...(takesBody ? { body: { kind: 'json' as const, limit: d.bodyLimit } } : {}),
    // A read answers synchronously (no promise): kept-alive and pipelined GETs are answered in order.
    handler: takesBody
      ? async (ex: HttpExchange) => {
          const principal = authenticate(ex);
          send(ex, await handle({ accountId: principal.accountId, principal, params: ex.params, body: await ex.json() }));
        }
      : (ex: HttpExchange) => {
          const principal = authenticate(ex);
          const answer = handle({ accountId: principal.accountId, principal, params: ex.params, body: undefined });
          if (answer instanceof Promise) return answer.then((a) => send(ex, a));
          send(ex, answer);
        },
  });
  const ok = (value: unknown): Answer => ({ status: 200, value });
  const created = (value: unknown): Answer => ({ status: 201, value });
  const WS = '/api/v1/workspaces/:workspaceId';
  const PROJECT = `${WS}/inference/:projectId`;

  return [
    route('POST', '/api/v1/workspaces', 'workspaces', true, async (c) => created(await m.createWorkspace(c.accountId, c.body))),
    route('GET', '/api/v1/workspaces', 'workspaces', false, (c) => ok(m.listWorkspaces(c.accountId))),
    route('GET', WS, 'workspace', false, (c) => ok(m.getWorkspace(c.accountId, c.params[0]!))),
    route('DELETE', WS, 'workspace', false, async (c) => ok(await m.deleteWorkspace(c.accountId, c.params[0]!))),
    route('PUT', `${WS}/yam`, 'yam', false, async (c) => {
      const r = await m.putYam(c.accountId, c.params[0]!);
      return { status: r.created ? 201 : 200, value: r.yam };
    }),
    route('GET', `${WS}/yam`, 'yam', false, (c) => ok(m.getYam(c.accountId, c.params[0]!))),

    route('POST', '/api/v1/keys', 'keys', true, async (c) => created(await m.createKey(c.accountId, c.body))),
    route('GET', '/api/v1/keys', 'keys', false, (c) => ok(m.listKeys(c.accountId))),
    route('PATCH', '/api/v1/keys/:keyId', 'key', true, async (c) => ok(await m.updateKey(c.accountId, c.params[0]!, c.body))),
    route('DELETE', '/api/v1/keys/:keyId', 'key', false, async (c) => ok(await m.revokeKey(c.accountId, c.params[0]!))),

    route('GET', '/api/v1/session', 'session', false, (c) => ok(d.accounts.whoAmI(c.principal))),
    route('GET', '/api/v1/users', 'users', false, (c) => ok(d.accounts.listUsers(c.principal))),
    route('POST', '/api/v1/users', 'users', true, async (c) => created(await d.accounts.createUser(c.principal, c.body))),
    route('DELETE', '/api/v1/users/:userId', 'user', false, async (c) => ok(await d.accounts.deleteUser(c.principal, c.params[0]!))),

    route('GET', '/api/v1/stats', 'stats', false, () => ok(d.stats.snapshot())),

    route('POST', `${WS}/inference`, 'projects', true, async (c) => created(await m.createProject(c.accountId, c.params[0]!, c.body))),
    route('GET', `${WS}/inference`, 'projects', false, (c) => ok(m.listProjects(c.accountId, c.params[0]!))),
    route('GET', PROJECT, 'project', false, (c) => ok(m.getProject(c.accountId, c.params[0]!, c.params[1]!))),
    route('PATCH', PROJECT, 'project', true, async (c) => ok(await m.updateProject(c.accountId, c.params[0]!, c.params[1]!, c.body))),
    route('DELETE', PROJECT, 'project', false, async (c) => ok(await m.deleteProject(c.accountId, c.params[0]!, c.params[1]!))),
    route('POST', `${PROJECT}/token`, 'project_token', false, async (c) => ok(await m.rotateToken(c.accountId, c.params[0]!, c.params[1]!))),
  ];
}
