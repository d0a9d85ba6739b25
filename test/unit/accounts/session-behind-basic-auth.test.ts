import { beforeEach, describe, expect, it } from 'vitest';
import { AccountService } from '../../../src/accounts/account-service.ts';
import { ManagementAuthenticator } from '../../../src/accounts/authenticator.ts';
import { SignInLimiter } from '../../../src/limits/sign-in-limiter.ts';
import type { HttpExchange } from '../../../src/http/http-exchange.ts';
import { presentedCredentials } from '../../../src/accounts/authenticated-route.ts';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

/**
 * docs/management-api.md: a management route takes the session cookie or a
 * Bearer API key, and "a Bearer header, when sent, is what counts". Any Authorization header used to
 * count, so behind a reverse proxy that asks for HTTP Basic credentials (the browser then sends
 * `Authorization: Basic ...` with every request, and the proxy passes it on) every request of a signed-in
 * dashboard was 401 invalid_api_key: the cookie was never looked at. Now only a Bearer header (any case,
 * well-formed or not) decides over the cookie; other schemes are not Hearth's and leave the cookie in
 * charge, with its Origin check on changes.
 */
const FAST_KDF = { N: 2 ** 10, r: 8, p: 1 };
const SESSION_HTTP = { publicUrl: undefined, trustProxy: false, maxAgeMs: 3_600_000 };
const HOST = 'hearth.example';

const temp = useTempStore('hearth-basic-proxy-');
let keys: ApiKeyRepository;
let auth: ManagementAuthenticator;
let sessionToken: string;

beforeEach(async () => {
  const users = new UserRepository(temp.store, FAST_KDF);
  keys = new ApiKeyRepository(temp.store);
  const sessions = new SessionRepository(temp.store, { idleMs: 60_000, maxAgeMs: 3_600_000 });
  auth = new ManagementAuthenticator(keys, sessions, users);
  await users.create({ email: 'ada@x.io', password: 'ada-password', accountId: 'acct-a', role: 'owner' });
  const accounts = new AccountService({ users, sessions, signIns: new SignInLimiter() });
  sessionToken = (await accounts.signIn({ email: 'ada@x.io', password: 'ada-password' }, '10.0.0.1')).token;
});

/** What the management routes read of a request: its method and these headers. */
function request(method: string, headers: { authorization?: string; cookie?: string; origin?: string }): HttpExchange {
  return {
    method,
    authorization: headers.authorization ?? '',
    cookie: headers.cookie ?? '',
    origin: headers.origin ?? '',
    host: HOST,
  } as unknown as HttpExchange;
}

const authenticate = (method: string, headers: Parameters<typeof request>[1]) =>
  auth.authenticate(presentedCredentials(request(method, headers), SESSION_HTTP));
const BASIC = `Basic ${Buffer.from('proxy-user:proxy-pass').toString('base64')}`;

describe('a signed-in dashboard behind a proxy that adds Authorization: Basic', () => {
  it('reads with the cookie authenticate as the user', () => {
    expect(authenticate('GET', { authorization: BASIC, cookie: `hearth_session=${sessionToken}` })).toMatchObject({
      kind: 'session',
      accountId: 'acct-a',
      role: 'owner',
    });
    expect(
      authenticate('GET', {
        authorization: 'Digest username="p", response="x"',
        cookie: `theme=dark; hearth_session=${sessionToken}`,
      }),
    ).toMatchObject({ kind: 'session' });
  });

  it('changes with the cookie still need the service origin', () => {
    const cookie = `hearth_session=${sessionToken}`;
    expect(authenticate('POST', { authorization: BASIC, cookie, origin: `https://${HOST}` })).toMatchObject({
      kind: 'session',
    });
    expect(() => authenticate('POST', { authorization: BASIC, cookie, origin: 'https://evil.example' })).toThrow(
      expect.objectContaining({ status: 403, code: 'origin_mismatch' }),
    );
    expect(() => authenticate('DELETE', { authorization: BASIC, cookie })).toThrow(
      expect.objectContaining({ status: 403, code: 'origin_mismatch' }),
    );
  });

  it('a Basic header without a cookie is 401 invalid_api_key, as before', () => {
    expect(() => authenticate('GET', { authorization: BASIC })).toThrow(
      expect.objectContaining({ status: 401, code: 'invalid_api_key' }),
    );
  });
});

describe('a Bearer header still decides over the cookie', () => {
  it('a valid key of another account wins; a wrong, empty or malformed Bearer is 401 even with a live cookie', async () => {
    const other = await keys.create('ci', 'acct-b');
    const cookie = `hearth_session=${sessionToken}`;
    expect(authenticate('POST', { authorization: `bearer ${other.key}`, cookie })).toEqual({
      kind: 'key',
      accountId: 'acct-b',
      keyId: other.id,
    });
    for (const authorization of [
      'Bearer hk_nope_nope',
      'Bearer',
      'BEARER ',
      `Bearer ${other.key} extra`,
      `Bearer ${other.key}, Bearer ${other.key}`,
    ]) {
      expect(() => authenticate('GET', { authorization, cookie }), authorization).toThrow(
        expect.objectContaining({ status: 401, code: 'invalid_api_key' }),
      );
    }
  });
});
