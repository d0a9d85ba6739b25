import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appArchive } from '../../helpers/app-archives.ts';
import { type HearthProcess, instantModelArgs, startHearthProcess } from '../../helpers/hearth-process.ts';
import { managementClient } from '../../helpers/management-client.ts';
import { isFrontParserAnswer, parseResponses, rawExchange } from '../../helpers/raw-http.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * The app proxy (`/apps/{appId}/...`) against hostile clients and hostile apps, end to end: the real
 * `hearth serve`, a real bubblewrap sandbox, a "mirror" app that shows what reached it and answers in odd
 * ways. Apps share Hearth's origin with the dashboard, so the dashboard's session cookie must never reach
 * an app, nor may an app set or clear it. Every answer is the app's or Hearth's documented error shape.
 */
const MIRROR = `
const http = require('node:http');
const json = (res, status, value, headers = {}) => { res.writeHead(status, { 'content-type': 'application/json', ...headers }); res.end(JSON.stringify(value)); };
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://app');
  switch (url.pathname) {
    case '/health': return json(res, 200, { ok: true });
    case '/headers': return json(res, 200, { url: req.url, headers: req.rawHeaders });
    case '/set-cookie': return json(res, 200, { ok: true }, {
      'set-cookie': ['hearth_session=planted-by-app; Path=/; HttpOnly', 'app_pref=1; Path=/apps/', 'Hearth_Session=x; Path=/'],
      'clear-site-data': '"cookies"',
    });
    case '/connection': return json(res, 200, { ok: true }, { connection: 'x-app-hop', 'x-app-hop': 'hop-only', 'x-app-kept': 'kept' });
    case '/garbage':
      res.socket.end('HTTP/1.1 200 OK\\r\\nContent-Length: not-a-number\\r\\n\\r\\nhello');
      return;
    case '/status': return json(res, Number(url.searchParams.get('code')), { status: Number(url.searchParams.get('code')) });
    case '/never': return;
    default: return json(res, 404, { error: 'not found' });
  }
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let hearth: HearthProcess;
let appId: string;
const type = (r: Response) => r.headers.get('content-type') ?? '';

const { api, deployLive, readyWorkspace } = managementClient(() => hearth, 30_000);

beforeAll(async () => {
  hearth = await startHearthProcess({
    args: instantModelArgs(await tinyModel(), { 'app-start-timeout': 20, 'app-proxy-timeout': 2 }),
  });
  await hearth.waitReady();
  const ws = await readyWorkspace('proxy');
  appId = (await api<{ appId: string }>('POST', `/api/v1/workspaces/${ws}/apps`, { name: 'mirror' })).body.appId;
  const archive = appArchive({ name: 'mirror', scripts: { start: 'node server.js' } }, { 'server.js': MIRROR });
  await deployLive(ws, appId, archive, 'the mirror app');
}, 120_000);

afterAll(async () => {
  await hearth?.stop();
  if (hearth) fs.rmSync(hearth.dataDir, { recursive: true, force: true });
});

const appGet = (p: string, headers: Record<string, string> = {}) =>
  fetch(`${hearth.baseUrl}/apps/${appId}${p}`, { headers, signal: AbortSignal.timeout(20_000) });

describe("the dashboard's session and the app", () => {
  it('the hearth_session cookie never reaches the app; its other cookies do', async () => {
    const r = await appGet('/headers', {
      cookie: 'theme=dark; hearth_session=sess_secret-of-a-signed-in-user; lang=en',
    });
    expect(r.status).toBe(200);
    const seen = ((await r.json()) as { headers: string[] }).headers;
    expect(JSON.stringify(seen)).not.toContain('sess_secret-of-a-signed-in-user');
    const cookie = seen[seen.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === 'cookie') + 1];
    expect(cookie).toBe('theme=dark; lang=en');
  });

  it('a request whose only cookie is hearth_session reaches the app without a Cookie header', async () => {
    const seen = (
      (await (await appGet('/headers', { cookie: 'hearth_session=sess_only' })).json()) as { headers: string[] }
    ).headers;
    expect(seen.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase())).not.toContain('cookie');
  });

  it('the app cannot set or clear cookies of the dashboard: its hearth_session Set-Cookie and Clear-Site-Data are dropped', async () => {
    const r = await appGet('/set-cookie');
    expect(r.status).toBe(200);
    const cookies = r.headers.getSetCookie();
    expect(cookies.some((c) => /^hearth_session=/.test(c))).toBe(false);
    expect(cookies).toContain('app_pref=1; Path=/apps/');
    expect(r.headers.get('clear-site-data')).toBeNull();
  });
});

/** One raw request (fetch refuses some of these headers and normalises `%2e%2e`); the first answer. */
async function raw(request: string | Buffer): Promise<{ status: number; headers: Map<string, string>; body: string }> {
  const res = await rawExchange(hearth.port, request, { waitMs: 10_000, expectResponses: 1 });
  const [answer] = parseResponses(res.text);
  expect(answer, res.text.slice(0, 300)).toBeDefined();
  return answer!;
}

describe('hop-by-hop headers', () => {
  it('headers a Connection header names are not forwarded, either way', async () => {
    const r = await raw(
      `GET /apps/${appId}/headers HTTP/1.1\r\nHost: x\r\nConnection: close, x-client-hop\r\nX-Client-Hop: hop-only\r\nX-Client-Kept: kept\r\n\r\n`,
    );
    expect(r.status).toBe(200);
    const names = (JSON.parse(r.body) as { headers: string[] }).headers
      .filter((_, i) => i % 2 === 0)
      .map((h) => h.toLowerCase());
    expect(names).toContain('x-client-kept');
    expect(names).not.toContain('x-client-hop');
    const back = await appGet('/connection');
    expect(back.headers.get('x-app-kept')).toBe('kept');
    expect(back.headers.get('x-app-hop')).toBeNull();
  });
});

describe('odd bytes from the client', () => {
  it('a path and a header value with raw UTF-8 bytes are proxied or refused in the error shape, never a 500', async () => {
    const cases = [
      Buffer.concat([
        Buffer.from(`GET /apps/${appId}/headers/`),
        Buffer.from('€✓', 'utf8'),
        Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      ]),
      Buffer.concat([
        Buffer.from(`GET /apps/${appId}/headers HTTP/1.1\r\nHost: x\r\nX-Name: `),
        Buffer.from('Zoë €', 'utf8'),
        Buffer.from('\r\nConnection: close\r\n\r\n'),
      ]),
      Buffer.from(
        `GET /apps/${appId}/headers HTTP/1.1\r\nHost: x\r\nX-Ctl: a\x01b\x7fc\r\nConnection: close\r\n\r\n`,
        'latin1',
      ),
      Buffer.from(
        `GET /apps/${appId}/headers HTTP/1.1\r\nHost: x\r\nX-Latin: caf\xe9\r\nConnection: close\r\n\r\n`,
        'latin1',
      ),
    ];
    for (const request of cases) {
      const res = await rawExchange(hearth.port, request, { waitMs: 10_000, expectResponses: 1 });
      const [answer] = parseResponses(res.text);
      expect(answer, res.text.slice(0, 300)).toBeDefined();
      expect(answer!.status, answer!.body).toBeLessThan(500);
      if (answer!.status >= 400 && !isFrontParserAnswer(answer!))
        expect(JSON.parse(answer!.body)).toMatchObject({
          error: { message: expect.any(String), type: expect.any(String) },
        });
    }
    expect((await appGet('/headers')).status).toBe(200); // and the server is fine
  });

  it('encoded traversal stays inside the app: it is proxied as sent, to the app', async () => {
    let reached = 0;
    for (const p of [
      '/%2e%2e/%2e%2e/api/v1/workspaces',
      '/..%2f..%2fapi/v1/workspaces',
      '/%252e%252e/x',
      '/../../api/v1/workspaces',
    ]) {
      const r = await raw(`GET /apps/${appId}/headers${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      if (r.status === 400 && isFrontParserAnswer(r)) continue; // the HTTP front refuses it before Hearth (docs/http-front.md)
      expect(r.status, p).toBe(404); // the mirror's own 404: the path went to the app, nowhere else
      expect(JSON.parse(r.body), p).toEqual({ error: 'not found' });
      reached++;
    }
    expect(reached).toBeGreaterThan(0);
  });
});

describe('hostile apps', () => {
  it('a malformed answer is 502 app_unreachable', async () => {
    const r = await appGet('/garbage');
    expect(r.status).toBe(502);
    expect(type(r)).toMatch(/json/);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('app_unreachable');
  });

  it('an app that never answers is 504 app_timeout', async () => {
    const r = await appGet('/never');
    expect(r.status).toBe(504);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('app_timeout');
  });

  it('unusual status codes from the app pass through, and the server keeps serving', async () => {
    for (const code of [299, 418, 599]) {
      const r = await appGet(`/status?code=${code}`);
      expect(r.status, String(code)).toBe(code);
      expect(await r.json()).toEqual({ status: code });
    }
  });
});
