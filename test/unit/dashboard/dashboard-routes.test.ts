import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../../src/http/http-server.ts';
import { CONTENT_SECURITY_POLICY, DASHBOARD_PAGES, dashboardRoutes } from '../../../src/dashboard/dashboard-routes.ts';
import type { Route } from '../../../src/http/router.ts';
import { acceptsGzip, loadDashboardBundle } from '../../../src/dashboard/static-assets.ts';
import { PAGE_PATTERNS } from '../../../web/src/routes.ts';
import { startLoopbackServer } from '../../helpers/uws-routes.ts';

/**
 * The dashboard's serving on a real uWS server over a hand-made build directory: index.html for every page
 * of the app, hashed assets with long caching, security headers, only manifest files reachable, and the
 * routes of the API untouched.
 */
const JS = `console.log(${JSON.stringify('x'.repeat(2000))});\n`;
const INDEX =
  '<!doctype html><html><head><script type="module" src="/assets/index-AbC123.js"></script></head><body><div id="app"></div></body></html>';

function writeDist(manifest: unknown): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-dist-'));
  fs.mkdirSync(path.join(dir, 'assets'));
  fs.mkdirSync(path.join(dir, '.vite'));
  fs.writeFileSync(path.join(dir, 'index.html'), INDEX);
  fs.writeFileSync(path.join(dir, 'assets', 'index-AbC123.js'), JS);
  fs.writeFileSync(path.join(dir, 'assets', 'index-Zz9.css'), 'body{margin:0}');
  fs.writeFileSync(path.join(dir, 'assets', 'stray-file.js'), 'not in the manifest');
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'outside assets');
  fs.writeFileSync(path.join(dir, '.vite', 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

const MANIFEST = { 'index.html': { file: 'assets/index-AbC123.js', isEntry: true, css: ['assets/index-Zz9.css'] } };

// Stand-ins for the routes the dashboard must never shadow.
const apiRoutes: Route[] = [
  { method: 'GET', pattern: '/health', name: 'health', handler: (ex) => ex.sendJson(200, { ok: true }) },
  {
    method: 'GET',
    pattern: '/api/v1/workspaces',
    name: 'workspaces',
    handler: (ex) => ex.sendJson(200, { object: 'list', data: [] }),
  },
];

let server: RunningHttpServer;
let bare: RunningHttpServer;
let base: string;

beforeAll(async () => {
  const bundle = loadDashboardBundle(writeDist(MANIFEST));
  expect(bundle).not.toBeNull();
  server = await startLoopbackServer([...apiRoutes, ...dashboardRoutes({ bundle })]);
  bare = await startLoopbackServer(dashboardRoutes({ bundle: null }));
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => {
  server?.close();
  bare?.close();
});

function expectSecurityHeaders(res: Response) {
  expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
}

describe('dashboard pages', () => {
  it('serves every page of the app (web/src/routes.ts) and nothing else as a page', () => {
    expect([...DASHBOARD_PAGES].sort()).toEqual(Object.values(PAGE_PATTERNS).sort());
  });

  it.each([
    '/',
    '/sign-in',
    '/setup?token=abc',
    '/settings/keys',
    '/settings/users',
    '/workspaces',
    '/workspaces/ws_123',
    '/playground',
  ])('GET %s is index.html, not cached, with the security headers', async (p) => {
    const res = await fetch(base + p);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expectSecurityHeaders(res);
    expect(await res.text()).toBe(INDEX);
  });

  it('the policy forbids inline scripts, framing and other origins', () => {
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe-inline');
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe-eval');
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    expect(CONTENT_SECURITY_POLICY).toContain("object-src 'none'");
  });

  it('answers 503 dashboard_not_built when web/dist is missing', async () => {
    const res = await fetch(`http://127.0.0.1:${bare.port}/`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('dashboard_not_built');
  });
});

describe('dashboard assets', () => {
  it('serves a manifest file with its type and immutable caching', async () => {
    const js = await fetch(`${base}/assets/index-AbC123.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expectSecurityHeaders(js);
    expect(await js.text()).toBe(JS);
    const css = await fetch(`${base}/assets/index-Zz9.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toBe('body{margin:0}');
  });

  it.each([
    '/assets/stray-file.js',
    '/assets/..%2Fsecret.txt',
    '/assets/%2e%2e%2fsecret.txt',
    '/assets/..%2F..%2Fpackage.json',
    '/assets/index-abc123.js',
    '/assets/',
  ])('GET %s is a 404 (only manifest files, by exact name)', async (p) => {
    const res = await fetch(base + p);
    expect(res.status).toBe(404);
    const text = await res.text();
    expect(text).not.toContain('outside assets');
    expect(text).not.toContain('not in the manifest');
    expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe('route_not_found');
  });

  it('a file in a sub-directory or outside assets/ is not reachable', async () => {
    for (const p of ['/assets/x/index-AbC123.js', '/secret.txt', '/index.html', '/.vite/manifest.json']) {
      const res = await fetch(base + p);
      expect(res.status, p).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('route_not_found');
    }
  });

  it('refuses a build whose manifest names a file outside assets/', () => {
    expect(() => loadDashboardBundle(writeDist({ x: { file: '../secret.txt' } }))).toThrow(/outside assets/);
    expect(() => loadDashboardBundle(writeDist({ x: { file: 'assets/../secret.txt' } }))).toThrow(/outside assets/);
  });

  it('keeps a gzip copy of compressible files that decompresses to the file', async () => {
    const bundle = loadDashboardBundle(writeDist(MANIFEST))!;
    const js = bundle.assets.get('index-AbC123.js')!;
    expect(js.gzip).not.toBeNull();
    expect(js.gzip!.length).toBeLessThan(js.body.length);
    const { gunzipSync } = await import('node:zlib');
    expect(gunzipSync(js.gzip!).toString()).toBe(JS);
    expect(bundle.assets.get('index-Zz9.css')!.gzip).toBeNull(); // too small to be worth it
  });

  it('sends the gzip copy only when the request admits gzip', async () => {
    const gz = await startLoopbackServer(dashboardRoutes({ bundle: loadDashboardBundle(writeDist(MANIFEST)) }));
    try {
      const res = await fetch(`http://127.0.0.1:${gz.port}/assets/index-AbC123.js`);
      expect(res.headers.get('content-encoding')).toBe('gzip');
      expect(res.headers.get('vary')).toBe('accept-encoding');
      expect(await res.text()).toBe(JS); // fetch decodes it
      const plain = await fetch(`http://127.0.0.1:${gz.port}/assets/index-AbC123.js`, {
        headers: { 'accept-encoding': 'identity' },
      });
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(await plain.text()).toBe(JS);
    } finally {
      gz.close();
    }
  });
});

describe('the API is not shadowed', () => {
  it('answers its own routes, and unknown API paths stay JSON 404s', async () => {
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ ok: true });
    expect(await (await fetch(`${base}/api/v1/workspaces`)).json()).toEqual({ object: 'list', data: [] });
    for (const p of ['/api/v1/nope', '/apps/app_1/x', '/metrics', '/api/inference/v1/models', '/sign-in/extra']) {
      const res = await fetch(base + p);
      expect(res.status, p).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json');
    }
  });
});

describe('acceptsGzip', () => {
  it.each([
    ['gzip, deflate, br', true],
    ['br;q=1.0, gzip;q=0.8', true],
    ['*', true],
    ['gzip;q=0', false],
    ['identity', false],
    ['', false],
    ['x-gzip', false],
  ])('%j -> %s', (header, want) => expect(acceptsGzip(header)).toBe(want));
});
