import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../../src/http/http-server.ts';
import { appBehindProxy } from '../../helpers/unit-app-proxy.ts';
import { startLoopbackServer } from '../../helpers/uws-routes.ts';

/**
 * Apps are served on Hearth's own origin (`/apps/{appId}/...`), so a signed-in user's browser sends the
 * dashboard's `hearth_session` cookie (Path=/) with every request to an app. The proxy passed the Cookie
 * header on whole: any app (code a member of the account deployed) read the session of every user who
 * opened it, owners included, and could call /api/v1 as them from its server (setting Origin itself),
 * e.g. to create an owner for itself. And an app's `Set-Cookie: hearth_session=...` reached the browser,
 * fixing the dashboard's session (its own path wins over Path=/). The proxy now removes the session cookie
 * from what it forwards and drops an app's Set-Cookie that names it; every other cookie passes both ways.
 */
let upstream: http.Server;
let server: RunningHttpServer;
let seen: http.IncomingHttpHeaders[] = [];

beforeAll(async () => {
  const proxy = await appBehindProxy((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => {
      res.setHeader('set-cookie', [
        'hearth_session=app-chosen-value; Path=/api',
        'app_pref=dark; Path=/apps/app_1',
        'hearth_session =spaced; Path=/',
        'hearth_session2=kept; Path=/',
        'Hearth_Session=other-name; Path=/',
      ]);
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
  });
  upstream = proxy.app;
  server = await startLoopbackServer(proxy.routes);
});
afterAll(async () => {
  server?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

async function visit(
  cookie: string | undefined,
  method = 'GET',
): Promise<{ status: number; setCookies: string[]; forwarded: http.IncomingHttpHeaders }> {
  seen = [];
  const headers: Record<string, string> = { authorization: 'Bearer app-own-token' };
  if (cookie !== undefined) headers.cookie = cookie;
  const r = await fetch(`http://127.0.0.1:${server.port}/apps/app_1/page?x=1`, {
    method,
    headers,
    signal: AbortSignal.timeout(10_000),
  });
  await r.text();
  expect(seen).toHaveLength(1);
  return { status: r.status, setCookies: r.headers.getSetCookie(), forwarded: seen[0]! };
}

describe('the app proxy and the dashboard session cookie', () => {
  it("never forwards hearth_session to the app; the app's own cookies and Authorization pass", async () => {
    const a = await visit('theme=light; hearth_session=owner-session-value-0123456789; app_sid=abc');
    expect(a.status).toBe(200);
    expect(a.forwarded.cookie).toBe('theme=light; app_sid=abc');
    expect(a.forwarded.authorization).toBe('Bearer app-own-token');

    const only = await visit('hearth_session=owner-session-value-0123456789');
    expect(only.forwarded.cookie).toBeUndefined();

    const spaced = await visit(' hearth_session = v1 ;hearth_session=v2;a=1;;b');
    expect(spaced.forwarded.cookie).toBe('a=1; b');

    const none = await visit(undefined, 'POST');
    expect(none.forwarded.cookie).toBeUndefined();
  });

  it("drops an app's Set-Cookie for hearth_session; its other cookies (names are case-sensitive) reach the browser", async () => {
    const r = await visit('app_sid=abc');
    expect(r.setCookies).toEqual([
      'app_pref=dark; Path=/apps/app_1',
      'hearth_session2=kept; Path=/',
      'Hearth_Session=other-name; Path=/',
    ]);
  });
});
