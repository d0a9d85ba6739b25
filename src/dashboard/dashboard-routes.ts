import { dashboardNotBuilt, routeNotFound } from '../errors/index.ts';
import { acceptsGzip } from './static-assets.ts';
import type { DashboardBundle, StaticFile } from './static-assets.ts';
import type { HeaderList, HttpExchange } from '../http/http-exchange.ts';
import type { Route } from '../http/router.ts';

/**
 * The dashboard (web/, built into web/dist at install): index.html for `/` and each client-side page, the
 * hashed files under `/assets/`. Every pattern here is a page of the app or `/assets/:file`, so nothing
 * under /api, /health, /metrics or /apps is shadowed; an unknown path stays the router's JSON 404.
 * The files come from memory (static-assets.ts): a request picks one by exact name or gets a 404.
 */

/** The app's pages (web/src/routes.ts PAGE_PATTERNS; test/unit/dashboard/dashboard-routes.test.ts keeps them equal). */
export const DASHBOARD_PAGES = [
  '/',
  '/sign-in',
  '/setup',
  '/settings/keys',
  '/settings/users',
  '/models',
  '/workspaces',
  '/workspaces/:workspaceId',
  '/playground',
  '/batches',
] as const;

/**
 * Strict policy: only this origin's scripts, styles, images and fetches; no inline script or style
 * element, no plugins, no framing, no <base> tricks, forms post only here.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: HeaderList = [
  ['content-security-policy', CONTENT_SECURITY_POLICY],
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
  ['x-frame-options', 'DENY'],
  ['cross-origin-opener-policy', 'same-origin'],
  ['cross-origin-resource-policy', 'same-origin'],
];
const INDEX_CACHE: HeaderList = [['cache-control', 'no-cache']];
const ASSET_CACHE: HeaderList = [['cache-control', 'public, max-age=31536000, immutable']];

/** A static file (bytes); under HEAD the exchange sends its headers and length only. */
function sendFile(ex: HttpExchange, file: StaticFile, cache: HeaderList, gzip: boolean): void {
  const useGzip = gzip && file.gzip !== null;
  const headers: Array<readonly [string, string]> = [['content-type', file.contentType], ...cache, ...SECURITY_HEADERS];
  if (file.gzip !== null) headers.push(['vary', 'accept-encoding']);
  if (useGzip) headers.push(['content-encoding', 'gzip']);
  const body = useGzip ? file.gzip! : file.body;
  ex.send(200, body, headers);
}

export interface DashboardRouteDeps {
  /** null when web/dist is missing: the pages answer 503 dashboard_not_built. */
  bundle: DashboardBundle | null;
}

export function dashboardRoutes(d: DashboardRouteDeps): Route[] {
  const page = (ex: HttpExchange) => {
    if (d.bundle === null) throw dashboardNotBuilt();
    sendFile(ex, d.bundle.index, INDEX_CACHE, acceptsGzip(ex.header('accept-encoding')));
  };
  const asset = (ex: HttpExchange) => {
    const file = d.bundle?.assets.get(ex.params[0]!);
    if (file === undefined) throw routeNotFound(ex.method, ex.url); // the documented JSON 404, like any unknown path
    sendFile(ex, file, ASSET_CACHE, acceptsGzip(ex.header('accept-encoding')));
  };
  return [
    ...DASHBOARD_PAGES.map((pattern): Route => ({ method: 'GET', pattern, name: 'dashboard', handler: page })),
    { method: 'GET', pattern: '/assets/:file', name: 'dashboard_asset', handler: asset },
  ];
}
