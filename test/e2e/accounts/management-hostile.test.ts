import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess, createUser } from '../../helpers/hearth-process.ts';
import { managementClient } from '../../helpers/management-client.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * Hostile management requests end to end (the real `hearth serve`): `null` for PATCH fields that cannot be
 * null, and a dashboard session that has ended, presented to every family of /api/v1 routes (management,
 * apps, app logs, deployments): each answer is the documented 401 and clears the cookie. Every request is bounded.
 */
let hearth: HearthProcess;
let ws: string;
let appId: string;
let projectId: string;
const BOUND_MS = 30_000;
const OWNER = { email: 'owner@example.com', password: 'owner password 1' };
type ErrorBody = { error: { message: string; type: string; param: string | null; code: string | null } };

const { api, readyWorkspace } = managementClient(() => hearth, BOUND_MS);

/** A request as the dashboard in a browser makes it: the session cookie, and its own Origin. */
async function withCookie(
  method: string,
  url: string,
  cookie: string,
  body?: string,
  contentType = 'application/json',
) {
  const r = await fetch(`${hearth.baseUrl}${url}`, {
    method,
    headers: { cookie, origin: hearth.baseUrl, ...(body === undefined ? {} : { 'content-type': contentType }) },
    body,
    signal: AbortSignal.timeout(BOUND_MS),
  });
  const text = await r.text();
  return {
    status: r.status,
    setCookie: r.headers.getSetCookie(),
    body: (text === '' ? {} : JSON.parse(text)) as ErrorBody,
  };
}

async function signIn(): Promise<string> {
  const r = await fetch(`${hearth.baseUrl}/api/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: hearth.baseUrl },
    body: JSON.stringify(OWNER),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  expect(r.status).toBe(204);
  return r.headers
    .getSetCookie()
    .find((c) => c.startsWith('hearth_session='))!
    .split(';')[0]!;
}

beforeAll(async () => {
  hearth = await startHearthProcess({ args: ['--model', await tinyModel(), '--engine', 'instant'] });
  const created = createUser(hearth.dataDir, OWNER);
  expect(created.status, created.stderr).toBe(0);
  await hearth.waitReady();
  ws = await readyWorkspace('hostile');
  appId = (
    await api<{ appId: string }>('POST', `/api/v1/workspaces/${ws}/apps`, {
      name: 'app',
      env: { A: 'a' },
      apiKeyEnv: 'HEARTH_KEY',
    })
  ).body.appId;
  const project = await api<{ projectId: string }>('POST', `/api/v1/workspaces/${ws}/inference`, {
    name: 'bot',
    provider: 'openai',
    model: 'gpt-4o-mini',
    providerApiKey: 'sk-test-0123456789abcdef',
  });
  expect(project.status, JSON.stringify(project.body)).toBe(201);
  projectId = project.body.projectId;
}, 120_000);

afterAll(async () => {
  await hearth?.stop();
  if (hearth) fs.rmSync(hearth.dataDir, { recursive: true, force: true });
});

describe('null in a PATCH body', () => {
  const expectWrongType = (r: { status: number; body: ErrorBody }, param: string) => {
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toEqual({
      message: expect.any(String),
      type: 'invalid_request_error',
      param,
      code: 'invalid_type',
    });
  };

  it('a field that cannot be null is a 400 invalid_type naming it, and nothing changes', async () => {
    const key = (await api<{ data: Array<{ id: string; name: string }> }>('GET', '/api/v1/keys')).body.data[0]!;
    expectWrongType(await api<ErrorBody>('PATCH', `/api/v1/keys/${key.id}`, { name: null }), 'name');
    for (const field of ['name', 'model', 'providerApiKey', 'state']) {
      expectWrongType(
        await api<ErrorBody>('PATCH', `/api/v1/workspaces/${ws}/inference/${projectId}`, { [field]: null }),
        field,
      );
    }
    for (const field of ['name', 'healthPath', 'env']) {
      expectWrongType(
        await api<ErrorBody>('PATCH', `/api/v1/workspaces/${ws}/apps/${appId}`, { [field]: null }),
        field,
      );
    }
    expect((await api<{ name: string }>('GET', `/api/v1/workspaces/${ws}/inference/${projectId}`)).body.name).toBe(
      'bot',
    );
    expect(
      (
        await api<{ name: string; healthPath: string; envNames: string[] }>(
          'GET',
          `/api/v1/workspaces/${ws}/apps/${appId}`,
        )
      ).body,
    ).toMatchObject({ name: 'app', healthPath: '/health', envNames: ['A'] });
  });

  it('where null has a meaning it keeps it: temperature clears, apiKeyEnv removes the key, an env value unsets', async () => {
    const project = await api<{ temperature: number | null }>(
      'PATCH',
      `/api/v1/workspaces/${ws}/inference/${projectId}`,
      { temperature: null },
    );
    expect(project.status, JSON.stringify(project.body)).toBe(200);
    expect(project.body.temperature).toBeNull();
    const app = await api<{ apiKeyEnv: string | null; envNames: string[] }>(
      'PATCH',
      `/api/v1/workspaces/${ws}/apps/${appId}`,
      { apiKeyEnv: null, env: { A: null } },
    );
    expect(app.status, JSON.stringify(app.body)).toBe(200);
    expect(app.body).toMatchObject({ apiKeyEnv: null, envNames: [] });
  });
});

describe('an ended session on every /api/v1 route family', () => {
  const isCleared = (setCookie: string[]) => setCookie.some((c) => /^hearth_session=;/.test(c) && /Max-Age=0/.test(c));

  it('answers 401 session_expired and clears the cookie on management, app, logs and deployment routes', async () => {
    const cookie = await signIn();
    const app = `/api/v1/workspaces/${ws}/apps/${appId}`;
    // Signed in: the cookie works on an app route, and nothing clears it.
    const live = await withCookie('GET', app, cookie);
    expect(live.status, JSON.stringify(live.body)).toBe(200);
    expect(isCleared(live.setCookie)).toBe(false);

    const out = await withCookie('DELETE', '/api/v1/session', cookie);
    expect(out.status).toBe(204);
    const calls: Array<[string, string, string?, string?]> = [
      ['GET', '/api/v1/workspaces'],
      ['GET', `/api/v1/workspaces/${ws}/apps`],
      ['GET', app],
      ['PATCH', app, JSON.stringify({ name: 'renamed' })],
      ['GET', `${app}/logs`],
      ['GET', `${app}/logs?follow=1`],
      ['GET', `${app}/deployments`],
      ['POST', `${app}/deployments`, JSON.stringify({ repository: 'https://example.invalid/x.git' })],
      ['POST', `${app}/deployments`, 'not really gzip', 'application/gzip'],
      ['POST', `${app}/restart`],
    ];
    for (const [method, url, body, type] of calls) {
      const r = await withCookie(method, url, cookie, body, type);
      expect(r.status, `${method} ${url}: ${JSON.stringify(r.body)}`).toBe(401);
      expect(r.body.error).toEqual({
        message: expect.any(String),
        type: 'authentication_error',
        param: null,
        code: 'session_expired',
      });
      expect(isCleared(r.setCookie), `${method} ${url}: ${JSON.stringify(r.setCookie)}`).toBe(true);
    }
    expect((await api<{ name: string }>('GET', app)).body.name).toBe('app');
    // A malformed cookie (5,000 characters, a space) is an ended session too, cleared; it was a plain 401 that kept it.
    for (const bad of [`hearth_session=${'a'.repeat(5000)}`, 'hearth_session=not a token']) {
      const r = await withCookie('GET', '/api/v1/workspaces', bad);
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('session_expired');
      expect(isCleared(r.setCookie)).toBe(true);
    }
  });

  it('a 401 that is not about a session (a wrong Bearer key) sets no cookie', async () => {
    const r = await fetch(`${hearth.baseUrl}/api/v1/workspaces/${ws}/apps`, {
      headers: { authorization: 'Bearer hk_nope_nope' },
      signal: AbortSignal.timeout(BOUND_MS),
    });
    expect(r.status).toBe(401);
    expect(r.headers.getSetCookie()).toEqual([]);
  });
});
