import { beforeEach, describe, expect, it } from 'vitest';
import { AccountService } from '../../../src/accounts/account-service.ts';
import { ManagementAuthenticator, type PresentedCredentials } from '../../../src/accounts/authenticator.ts';
import { parseKeyInput, parseKeyPatch, parseUserInput } from '../../../src/accounts/account-input.ts';
import { SignInLimiter } from '../../../src/limits/sign-in-limiter.ts';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

const FAST = { N: 2 ** 10, r: 8, p: 1 };
const temp = useTempStore('hearth-accounts-');
let users: UserRepository;
let keys: ApiKeyRepository;
let accounts: AccountService;
let auth: ManagementAuthenticator;

beforeEach(async () => {
  users = new UserRepository(temp.store, FAST);
  keys = new ApiKeyRepository(temp.store);
  const sessions = new SessionRepository(temp.store, { idleMs: 60_000, maxAgeMs: 3_600_000 });
  accounts = new AccountService({ users, sessions, signIns: new SignInLimiter({ perEmail: 3, perAddress: 5 }) });
  auth = new ManagementAuthenticator(keys, sessions, users);
  await users.create({ email: 'owner@x.io', password: 'owner-pass', accountId: 'a1', role: 'owner' });
  await users.create({ email: 'member@x.io', password: 'member-pass', accountId: 'a1', role: 'member' });
});

const cookie = (sessionToken: string, more: Partial<PresentedCredentials> = {}): PresentedCredentials => ({
  authorization: '',
  bearer: undefined,
  sessionTokens: [sessionToken],
  changes: false,
  sameOrigin: false,
  ...more,
});

describe('AccountService + ManagementAuthenticator', () => {
  it('signs in, and the session authenticates as the user with its role', async () => {
    const s = await accounts.signIn({ email: 'OWNER@x.io', password: 'owner-pass' }, '10.0.0.1');
    expect(s.user).toMatchObject({ email: 'owner@x.io', role: 'owner', accountId: 'a1' });
    const p = auth.authenticate(cookie(s.token));
    expect(p).toMatchObject({ kind: 'session', accountId: 'a1', role: 'owner' });
    expect(accounts.whoAmI(p)).toMatchObject({
      auth: 'session',
      accountId: 'a1',
      role: 'owner',
      user: { email: 'owner@x.io' },
    });
  });

  it('a wrong password is 401 invalid_credentials; after the limit even the right one is 429', async () => {
    for (let i = 0; i < 3; i++)
      await expect(accounts.signIn({ email: 'owner@x.io', password: 'nope-nope' }, '10.0.0.1')).rejects.toMatchObject({
        status: 401,
        code: 'invalid_credentials',
      });
    await expect(accounts.signIn({ email: 'owner@x.io', password: 'owner-pass' }, '10.0.0.2')).rejects.toMatchObject({
      status: 429,
      code: 'too_many_sign_in_attempts',
    });
    // another email from the same address is still allowed (5 per address)
    expect((await accounts.signIn({ email: 'member@x.io', password: 'member-pass' }, '10.0.0.1')).user.role).toBe(
      'member',
    );
  });

  it('cookie changes need the same origin; a Bearer header decides over the cookie', async () => {
    const s = await accounts.signIn({ email: 'owner@x.io', password: 'owner-pass' }, '10.0.0.1');
    expect(() => auth.authenticate(cookie(s.token, { changes: true }))).toThrow(
      expect.objectContaining({ status: 403, code: 'origin_mismatch' }),
    );
    expect(auth.authenticate(cookie(s.token, { changes: true, sameOrigin: true })).kind).toBe('session');
    // A cookie planted for the parent domain, sent before Hearth's own, neither signs the user out nor wins.
    expect(auth.authenticate(cookie('', { sessionTokens: ['planted', s.token] }))).toMatchObject({
      kind: 'session',
      accountId: 'a1',
    });
    expect(() => auth.authenticate(cookie(s.token, { authorization: 'Bearer nope', bearer: 'nope' }))).toThrow(
      expect.objectContaining({ status: 401, code: 'invalid_api_key' }),
    );
    const k = await keys.create('ci', 'a1');
    expect(
      auth.authenticate(
        cookie('', { authorization: `Bearer ${k.key}`, bearer: k.key, sessionTokens: [], changes: true }),
      ),
    ).toEqual({ kind: 'key', accountId: 'a1', keyId: k.id });
    expect(() => auth.authenticate(cookie('unknown-session-value'))).toThrow(
      expect.objectContaining({ status: 401, code: 'session_expired' }),
    );
    expect(() =>
      auth.authenticate({
        authorization: '',
        bearer: undefined,
        sessionTokens: [],
        changes: false,
        sameOrigin: false,
      }),
    ).toThrow(expect.objectContaining({ status: 401, code: 'invalid_api_key' }));
  });

  it('users routes: owner only; members and API keys get 403 owner_required; last owner stays', async () => {
    const owner = auth.authenticate(
      cookie((await accounts.signIn({ email: 'owner@x.io', password: 'owner-pass' }, 'a')).token),
    );
    const member = auth.authenticate(
      cookie((await accounts.signIn({ email: 'member@x.io', password: 'member-pass' }, 'a')).token),
    );
    const key = { kind: 'key' as const, accountId: 'a1', keyId: 'k' };
    for (const p of [member, key]) {
      expect(() => accounts.listUsers(p)).toThrow(expect.objectContaining({ status: 403, code: 'owner_required' }));
      await expect(accounts.createUser(p, { email: 'n@x.io', password: 'password1' })).rejects.toMatchObject({
        status: 403,
        code: 'owner_required',
      });
    }
    const created = await accounts.createUser(owner, { email: 'new@x.io', password: 'password1' });
    expect(created).toMatchObject({ email: 'new@x.io', role: 'member', accountId: 'a1' });
    expect(accounts.listUsers(owner).data.map((u) => u.email)).toEqual(['owner@x.io', 'member@x.io', 'new@x.io']);
    await expect(accounts.createUser(owner, { email: 'NEW@x.io', password: 'password1' })).rejects.toMatchObject({
      status: 409,
      code: 'email_taken',
    });
    if (owner.kind !== 'session') throw new Error('not a session');
    await expect(accounts.deleteUser(owner, owner.userId)).rejects.toMatchObject({ status: 409, code: 'last_owner' });
    await expect(accounts.deleteUser(owner, 'usr_missing')).rejects.toMatchObject({
      status: 404,
      code: 'user_not_found',
    });
    expect(await accounts.deleteUser(owner, created.id)).toEqual({ id: created.id, deleted: true });
  });

  it('a removed user’s session is session_expired at once', async () => {
    const s = await accounts.signIn({ email: 'member@x.io', password: 'member-pass' }, 'a');
    await users.delete(s.user.id);
    expect(() => auth.authenticate(cookie(s.token))).toThrow(expect.objectContaining({ code: 'session_expired' }));
  });
});

describe('inputs', () => {
  it('key limits: positive integers or null; PATCH is partial, limits:null lifts all', () => {
    expect(parseKeyInput({ name: 'k' }).limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'interactive',
    });
    expect(parseKeyInput({ name: 'k', limits: { maxConcurrent: 2 } }).limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: 2,
      priority: 'interactive',
    });
    expect(parseKeyPatch({ limits: { tokensPerMinute: 5 } }).limits).toEqual({ tokensPerMinute: 5 });
    expect(parseKeyPatch({ limits: null }).limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'interactive',
    });
    for (const [limits, param] of [
      [{ maxConcurrent: 0 }, 'limits.maxConcurrent'],
      [{ requestsPerMinute: 1.5 }, 'limits.requestsPerMinute'],
      [{ tokensPerMinute: '10' }, 'limits.tokensPerMinute'],
      [{ rpm: 1 }, 'limits.rpm'],
      [[1], 'limits'],
    ] as const) {
      expect(() => parseKeyInput({ name: 'k', limits })).toThrow(expect.objectContaining({ status: 400, param }));
    }
    expect(() => parseKeyPatch({})).toThrow(expect.objectContaining({ code: 'empty_update' }));
  });

  it('users: email shape, password length (not trimmed), role', () => {
    expect(parseUserInput({ email: 'a@b.c', password: ' 12345678 ' })).toEqual({
      email: 'a@b.c',
      password: ' 12345678 ',
      role: 'member',
    });
    expect(() => parseUserInput({ email: 'not-an-email', password: '12345678' })).toThrow(
      expect.objectContaining({ param: 'email' }),
    );
    expect(() => parseUserInput({ email: 'a@b.c', password: 'short' })).toThrow(
      expect.objectContaining({ param: 'password' }),
    );
    expect(() => parseUserInput({ email: 'a@b.c', password: 'x'.repeat(1025) })).toThrow(
      expect.objectContaining({ param: 'password' }),
    );
    expect(() => parseUserInput({ email: 'a@b.c', password: '12345678', role: 'admin' })).toThrow(
      expect.objectContaining({ param: 'role' }),
    );
    expect(() => parseUserInput({ email: 'a@b.c', password: '12345678', extra: 1 })).toThrow(
      expect.objectContaining({ code: 'unknown_parameter' }),
    );
  });
});
