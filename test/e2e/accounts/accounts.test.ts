import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type HearthProcess, hearthCli, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Users and sessions end to end on the real CLI server: the first-run setup link, sign-in and its cookie,
 * wrong passwords and their rate limit, the Origin check on changes made with the cookie, owner-only users
 * routes, idle expiry (a short --session-idle-ms), sign-out, the `hearth users` CLI, and API keys still
 * working on every management route while the inference endpoints refuse the cookie.
 */
const IDLE_MS = 8000;
let hearth: HearthProcess;
let origin: string;
let model: string;

beforeAll(async () => {
  const file = await tinyChatModel();
  model = `local/${path.basename(file, '.gguf')}`;
  hearth = await startHearthProcess({ args: ['--model', file, '--session-idle-ms', String(IDLE_MS)] });
  origin = hearth.baseUrl;
  await hearth.waitReady();
});

afterAll(async () => {
  await hearth?.stop();
});

interface Answer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}
type ErrorBody = { error: { message: string; type: string; code: string | null; param: string | null } };

/** A request as a browser on the dashboard (or a script) makes it: `cookie`, `origin` and `bearer` optional. */
async function call<T = Record<string, unknown>>(
  method: string,
  url: string,
  o: { body?: unknown; cookie?: string; origin?: string; bearer?: string; headers?: Record<string, string> } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.cookie) headers.cookie = o.cookie;
  if (o.origin) headers.origin = o.origin;
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(`${hearth.baseUrl}${url}`, {
    method,
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: (text === '' ? {} : JSON.parse(text)) as T };
}

/** The `hearth_session=...` pair of a Set-Cookie answer. */
function sessionCookieOf(a: Answer<unknown>): string {
  const c = a.headers.getSetCookie().find((v) => v.startsWith('hearth_session='));
  if (!c) throw new Error(`no session cookie in ${JSON.stringify([...a.headers])}`);
  return c.split(';')[0]!;
}

async function signIn(email: string, password: string): Promise<string> {
  const a = await call('POST', '/api/v1/session', { body: { email, password }, origin });
  expect(a.status).toBe(204);
  return sessionCookieOf(a);
}

const OWNER = { email: 'Owner@Example.com', password: 'owner password 1' };
let ownerCookie: string | undefined;

// A fresh owner session per test (once setup made the owner), so the short idle time never ends it mid-file.
beforeEach(async () => {
  if (ownerCookie !== undefined) ownerCookie = await signIn(OWNER.email, OWNER.password);
});

describe('first-run setup', () => {
  it('logs a one-time setup link; POST /api/v1/setup creates the first owner of account default and signs them in', async () => {
    expect((await call('GET', '/api/v1/setup')).body).toEqual({ setupRequired: true });
    const m = /"url":"(http[^"]+\/setup\?token=([A-Za-z0-9_-]+))"/.exec(hearth.logs());
    expect(m, hearth.logs()).not.toBeNull();
    expect(m![1]!.startsWith(`${hearth.baseUrl}/setup?token=`)).toBe(true);
    const token = m![2]!;

    const wrong = await call<ErrorBody>('POST', '/api/v1/setup', { body: { token: `${token}x`, ...OWNER } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('invalid_setup_token');

    const weak = await call<ErrorBody>('POST', '/api/v1/setup', {
      body: { token, email: OWNER.email, password: 'short' },
    });
    expect(weak.status).toBe(400);
    expect(weak.body.error.param).toBe('password');

    const done = await call<{ user: Record<string, unknown> }>('POST', '/api/v1/setup', {
      body: { token, ...OWNER },
      origin,
    });
    expect(done.status).toBe(201);
    expect(done.body.user).toMatchObject({ email: 'owner@example.com', role: 'owner', accountId: 'default' });
    expect(done.body.user).not.toHaveProperty('passwordHash');
    ownerCookie = sessionCookieOf(done);

    const again = await call<ErrorBody>('POST', '/api/v1/setup', {
      body: { token, email: 'x@example.com', password: 'another password' },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('setup_complete');
    expect((await call('GET', '/api/v1/setup')).body).toEqual({ setupRequired: false });
    // the setup account is the one `hearth keys create` filled: the owner sees the CLI's key
    const keys = await call<{ data: Array<{ name: string }> }>('GET', '/api/v1/keys', { cookie: ownerCookie });
    expect(keys.body.data.map((k) => k.name)).toContain('test');
  });
});

describe('sessions', () => {
  it('sign-in answers 204 with an HttpOnly, SameSite=Strict cookie (Secure behind https); who-am-I reads it', async () => {
    const a = await call('POST', '/api/v1/session', {
      body: { email: 'OWNER@example.com ', password: OWNER.password },
    });
    expect(a.status).toBe(204);
    const setCookie = a.headers.getSetCookie().find((c) => c.startsWith('hearth_session='))!;
    expect(setCookie).toMatch(/^hearth_session=[A-Za-z0-9_-]{43}; /);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/');
    expect(setCookie).not.toContain('Secure');

    const behindTls = await call('POST', '/api/v1/session', { body: OWNER, headers: { 'x-forwarded-proto': 'https' } });
    expect(behindTls.headers.getSetCookie().find((c) => c.startsWith('hearth_session='))).toContain('; Secure');

    const me = await call<Record<string, unknown>>('GET', '/api/v1/session', { cookie: sessionCookieOf(a) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      auth: 'session',
      accountId: 'default',
      role: 'owner',
      user: { email: 'owner@example.com', role: 'owner' },
    });
    expect(typeof me.body.expiresAt).toBe('string');
  });

  it('a wrong password is 401 invalid_credentials, an unknown email the same; no cookie is set', async () => {
    for (const body of [
      { email: OWNER.email, password: 'not the password' },
      { email: 'nobody@example.com', password: OWNER.password },
    ]) {
      const a = await call<ErrorBody>('POST', '/api/v1/session', { body });
      expect(a.status).toBe(401);
      expect(a.body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_credentials' });
      expect(a.headers.getSetCookie()).toEqual([]);
    }
    const bad = await call<ErrorBody>('POST', '/api/v1/session', { body: { email: OWNER.email } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('password');
  });

  it('failed sign-ins are rate-limited per email: 429 + Retry-After, even with the right password', async () => {
    const owner = await call<{ id: string }>('POST', '/api/v1/users', {
      body: { email: 'target@example.com', password: 'target password' },
      cookie: ownerCookie,
      origin,
    });
    expect(owner.status).toBe(201);
    for (let i = 0; i < 5; i++)
      expect(
        (await call('POST', '/api/v1/session', { body: { email: 'target@example.com', password: `guess ${i} wrong` } }))
          .status,
      ).toBe(401);
    const limited = await call<ErrorBody>('POST', '/api/v1/session', {
      body: { email: 'target@example.com', password: 'target password' },
    });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_sign_in_attempts' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // another email is not held up
    expect((await call('POST', '/api/v1/session', { body: OWNER })).status).toBe(204);
  });

  it('changes made with the cookie need the service origin; reads do not; a Bearer key needs none', async () => {
    const noOrigin = await call<ErrorBody>('POST', '/api/v1/workspaces', { body: { name: 'w' }, cookie: ownerCookie });
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.error).toMatchObject({ type: 'permission_error', code: 'origin_mismatch' });
    const foreign = await call<ErrorBody>('POST', '/api/v1/workspaces', {
      body: { name: 'w' },
      cookie: ownerCookie,
      origin: 'https://evil.example',
    });
    expect(foreign.status).toBe(403);
    const sameHostOtherPort = await call<ErrorBody>('DELETE', '/api/v1/keys/whatever', {
      cookie: ownerCookie,
      origin: 'http://127.0.0.1:1',
    });
    expect(sameHostOtherPort.body.error.code).toBe('origin_mismatch');
    const ok = await call<{ workspaceId: string }>('POST', '/api/v1/workspaces', {
      body: { name: 'from the browser' },
      cookie: ownerCookie,
      origin,
    });
    expect(ok.status).toBe(201);
    expect((await call('GET', `/api/v1/workspaces/${ok.body.workspaceId}`, { cookie: ownerCookie })).status).toBe(200);
    const byKey = await call('POST', '/api/v1/workspaces', { body: { name: 'from a script' }, bearer: hearth.key });
    expect(byKey.status).toBe(201);
    const loginCsrf = await call<ErrorBody>('POST', '/api/v1/session', { body: OWNER, origin: 'https://evil.example' });
    expect(loginCsrf.status).toBe(403);
  });

  it('API keys still work on management routes; the inference endpoints refuse the cookie', async () => {
    const list = await call<{ data: Array<{ name: string }> }>('GET', '/api/v1/workspaces', { bearer: hearth.key });
    expect(list.status).toBe(200);
    expect(list.body.data.map((w) => w.name)).toEqual(expect.arrayContaining(['from the browser', 'from a script'])); // one account, two ways in
    expect((await call('GET', '/api/v1/session', { bearer: hearth.key })).body).toEqual({
      auth: 'key',
      accountId: 'default',
      user: null,
      role: null,
      expiresAt: null,
    });
    expect((await call('GET', '/api/v1/stats', { bearer: hearth.key })).status).toBe(200);
    // a bad Bearer header decides, even with a good cookie
    expect(
      (
        await call<ErrorBody>('GET', '/api/v1/workspaces', {
          bearer: 'hk_nope_nopenopenopenopenope',
          cookie: ownerCookie,
        })
      ).status,
    ).toBe(401);
    const chat = await call<ErrorBody>('POST', '/api/inference/v1/chat/completions', {
      body: { model, messages: [{ role: 'user', content: 'hi' }] },
      cookie: ownerCookie,
      origin,
    });
    expect(chat.status).toBe(401);
    expect((await call('GET', '/api/inference/v1/models', { cookie: ownerCookie })).status).toBe(401);
    expect((await call('GET', '/api/v1/workspaces')).status).toBe(401);
  });

  it('GET /api/v1/stats: model state and recent figures for the dashboard', async () => {
    const chat = await call('POST', '/api/inference/v1/chat/completions', {
      body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
      bearer: hearth.key,
    });
    expect(chat.status).toBe(200);
    const s = await call<Record<string, any>>('GET', '/api/v1/stats', { cookie: ownerCookie });
    expect(s.status).toBe(200);
    expect(s.body.model).toMatchObject({
      id: model,
      state: 'ready',
      workers: { ready: 1, total: 1 },
      pull: null,
      error: null,
    });
    expect(s.body.requests).toEqual({ running: 0, waiting: 0 });
    expect(s.body.window.requests).toBeGreaterThanOrEqual(1);
    expect(s.body.window.completionTokens).toBeGreaterThanOrEqual(1);
    expect(s.body.window.ttftMs.p50).toBeGreaterThanOrEqual(0);
    expect(s.body.series).toHaveLength(30);
  });
});

describe('users (owner only)', () => {
  it('an owner creates and removes users; a member is refused the users routes; the last owner stays', async () => {
    const member = await call<Record<string, string>>('POST', '/api/v1/users', {
      body: { email: 'Member@Example.com', password: 'member password' },
      cookie: ownerCookie,
      origin,
    });
    expect(member.status).toBe(201);
    expect(member.body).toMatchObject({ email: 'member@example.com', role: 'member', accountId: 'default' });
    const dup = await call<ErrorBody>('POST', '/api/v1/users', {
      body: { email: 'member@example.com', password: 'member password' },
      cookie: ownerCookie,
      origin,
    });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('email_taken');

    const memberCookie = await signIn('member@example.com', 'member password');
    for (const [method, url, body] of [
      ['GET', '/api/v1/users'],
      ['POST', '/api/v1/users', { email: 'x@example.com', password: 'x password 1' }],
      ['DELETE', `/api/v1/users/${member.body.id}`],
    ] as const) {
      const refused = await call<ErrorBody>(method, url, { body, cookie: memberCookie, origin });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ type: 'permission_error', code: 'owner_required' });
    }
    expect((await call<ErrorBody>('GET', '/api/v1/users', { bearer: hearth.key })).body.error.code).toBe(
      'owner_required',
    );
    // a member still manages the account's keys and workspaces
    expect((await call('GET', '/api/v1/keys', { cookie: memberCookie })).status).toBe(200);

    const list = await call<{ data: Array<{ email: string; id: string; role: string }> }>('GET', '/api/v1/users', {
      cookie: ownerCookie,
    });
    expect(list.body.data.map((u) => u.email)).toEqual(
      expect.arrayContaining(['owner@example.com', 'member@example.com']),
    );
    const ownerId = list.body.data.find((u) => u.role === 'owner')!.id;
    const last = await call<ErrorBody>('DELETE', `/api/v1/users/${ownerId}`, { cookie: ownerCookie, origin });
    expect(last.status).toBe(409);
    expect(last.body.error.code).toBe('last_owner');

    expect((await call('DELETE', `/api/v1/users/${member.body.id}`, { cookie: ownerCookie, origin })).body).toEqual({
      id: member.body.id,
      deleted: true,
    });
    const gone = await call<ErrorBody>('GET', '/api/v1/keys', { cookie: memberCookie });
    expect(gone.status).toBe(401);
    expect(gone.body.error.code).toBe('session_expired');
    expect(gone.headers.getSetCookie()[0]).toMatch(/^hearth_session=; .*Max-Age=0/);
    expect(
      (await call<ErrorBody>('DELETE', `/api/v1/users/${member.body.id}`, { cookie: ownerCookie, origin })).body.error
        .code,
    ).toBe('user_not_found');
  });
});

describe('session end', () => {
  it('sign-out ends the session at once and clears the cookie', async () => {
    const cookie = await signIn(OWNER.email, OWNER.password);
    expect((await call<ErrorBody>('DELETE', '/api/v1/session', { cookie })).body.error.code).toBe('origin_mismatch');
    const out = await call('DELETE', '/api/v1/session', { cookie, origin });
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie()[0]).toMatch(/^hearth_session=; Path=\/; HttpOnly; SameSite=Strict; Max-Age=0/);
    expect((await call<ErrorBody>('GET', '/api/v1/session', { cookie })).body.error.code).toBe('session_expired');
    expect((await call('DELETE', '/api/v1/session', { origin })).status).toBe(204); // signed out already: still fine
  });

  it('a session unused for longer than --session-idle-ms has expired', async () => {
    const cookie = await signIn(OWNER.email, OWNER.password);
    expect((await call('GET', '/api/v1/session', { cookie })).status).toBe(200);
    await new Promise((r) => setTimeout(r, IDLE_MS + 1000));
    const expired = await call<ErrorBody>('GET', '/api/v1/workspaces', { cookie });
    expect(expired.status).toBe(401);
    expect(expired.body.error).toMatchObject({ type: 'authentication_error', code: 'session_expired' });
  });
});

describe('hearth users (CLI)', () => {
  const BIN = path.resolve(import.meta.dirname, '../../../bin/hearth.js');
  const cli = (args: string[], input?: string) =>
    spawnSync(process.execPath, [BIN, 'users', ...args, '--data-dir', hearth.dataDir], { input, encoding: 'utf8' });

  it('creates a user with the password from stdin, lists and deletes; the server sees them at once', async () => {
    const created = cli(
      ['create', '--email', 'Cli@Example.com', '--account', 'default', '--role', 'owner', '--json'],
      'cli password 1\n',
    );
    expect(created.status, created.stderr).toBe(0);
    const user = JSON.parse(created.stdout) as { id: string; email: string; role: string };
    expect(user).toMatchObject({ email: 'cli@example.com', role: 'owner' });
    expect(
      (await call('POST', '/api/v1/session', { body: { email: 'cli@example.com', password: 'cli password 1' } }))
        .status,
    ).toBe(204);

    expect(cli(['create', '--email', 'cli@example.com', '--account', 'default'], 'cli password 2').stderr).toContain(
      'exists already',
    );
    expect(cli(['create', '--email', 'short@example.com', '--account', 'default'], 'short').stderr).toContain(
      "'password' must be at least 8 characters",
    );
    expect(cli(['create', '--email', 'x@example.com'], 'x password 1').status).toBe(2);

    const list = cli(['list', '--json']);
    expect((JSON.parse(list.stdout) as Array<{ email: string }>).map((u) => u.email)).toContain('cli@example.com');
    expect(list.stdout).not.toContain('scrypt');
    expect(cli(['delete', user.id]).stdout).toContain(`deleted ${user.id}`);
    expect(cli(['delete', user.id]).status).toBe(1);
    expect(hearthCli(['--help']).stdout).toContain('users');
  });
});
