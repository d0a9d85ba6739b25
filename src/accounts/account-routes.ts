import type { Route } from '../http/router.ts';
import type { AccountService } from './account-service.ts';
import { authenticatedRoutes, type AuthenticatedRouteDeps } from './authenticated-route.ts';
import type { KeyService } from './key-service.ts';

export interface AccountRouteDeps extends AuthenticatedRouteDeps {
  keys: KeyService;
  accounts: AccountService;
}

/** The account's API keys, the caller's session and the account's users under /api/v1. */
export function accountRoutes(d: AccountRouteDeps): Route[] {
  const { route, ok, created } = authenticatedRoutes(d);
  return [
    route('POST', '/api/v1/keys', 'keys', true, async (c) => created(await d.keys.createKey(c.accountId, c.body))),
    route('GET', '/api/v1/keys', 'keys', false, (c) => ok(d.keys.listKeys(c.accountId))),
    route('PATCH', '/api/v1/keys/:keyId', 'key', true, async (c) =>
      ok(await d.keys.updateKey(c.accountId, c.params[0]!, c.body)),
    ),
    route('DELETE', '/api/v1/keys/:keyId', 'key', false, async (c) =>
      ok(await d.keys.revokeKey(c.accountId, c.params[0]!)),
    ),

    route('GET', '/api/v1/session', 'session', false, (c) => ok(d.accounts.whoAmI(c.principal))),
    route('GET', '/api/v1/users', 'users', false, (c) => ok(d.accounts.listUsers(c.principal))),
    route('POST', '/api/v1/users', 'users', true, async (c) =>
      created(await d.accounts.createUser(c.principal, c.body)),
    ),
    route('DELETE', '/api/v1/users/:userId', 'user', false, async (c) =>
      ok(await d.accounts.deleteUser(c.principal, c.params[0]!)),
    ),
  ];
}
