import http from 'node:http';
import type { AppHost } from './app-host.ts';
import { ApiError, appNotFound, appNotLive, payloadTooLarge } from '../errors/index.ts';
import { AppExchange } from './app-exchange.ts';
import type { HttpExchange, HeaderList } from '../http/http-exchange.ts';
import type { HttpMethod, Route } from '../http/router.ts';
import { setsSessionCookie, withoutSessionCookie } from '../accounts/session-cookie.ts';

/**
 * `{base_url}/apps/{appId}/<path>` -> the app's live process at `http://127.0.0.1:{port}/<path>` (contract
 * "Reaching an app"). Public: the app does its own authentication. Streams both ways with backpressure:
 * the request body goes upstream chunk by chunk (the client is paused while the app's socket is full),
 * the answer comes back chunk by chunk (the app's socket is paused while the client's is full), so an SSE
 * stream arrives event by event. A client that disconnects aborts the upstream request. Bounds: the
 * request body (`bodyLimit`, 413), the wait for the answer's head (`headersTimeoutMs`, 504) and silence
 * while streaming (`idleTimeoutMs`). No live deployment: 503 app_not_live with Retry-After. Apps share
 * Hearth's origin: the dashboard's session cookie is neither forwarded to an app nor set by one, an app's
 * Clear-Site-Data is dropped, and hop-by-hop headers (and those Connection names) stop here.
 */
export interface AppProxyDeps {
  host: AppHost;
  bodyLimit: number;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  /** `http` or `https`: what the client used to reach Hearth (from --public-url). */
  proto: string;
  /** Behind a proxy that sets X-Forwarded-For (--trust-proxy): keep its chain and append the peer; else the peer alone. */
  trustProxy: boolean;
}

/**
 * Apps share Hearth's origin with the dashboard: a page an app serves runs in a sandboxed, opaque origin, so
 * its scripts cannot call /api/v1 with a signed-in user's session (the cookie is SameSite=Strict and the
 * Origin check fails). Added to every proxied answer, on top of any policy the app sets itself.
 */
const APP_SANDBOX_CSP: [string, string] = [
  'content-security-policy',
  'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads',
];

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  'content-length',
]);

/** The hop-by-hop set plus the headers a Connection header names (RFC 9110 7.6.1: they end at this hop). */
function hopByHop(headers: ReadonlyArray<readonly [string, string]>): Set<string> {
  const out = new Set(HOP_BY_HOP);
  for (const [k, v] of headers)
    if (k === 'connection') for (const name of v.split(',')) out.add(name.trim().toLowerCase());
  return out;
}

/** Answer headers an app may not send through Hearth's origin: setting the session cookie, or clearing the origin's cookies and storage. */
function reachesHearth(name: string, value: string): boolean {
  return name === 'clear-site-data' || (name === 'set-cookie' && setsSessionCookie(value));
}
const METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const appUnreachable = (detail: string) =>
  new ApiError({
    status: 502,
    type: 'upstream_error',
    message: `The app did not answer: ${detail}`,
    param: null,
    code: 'app_unreachable',
  });
const appTimeout = (ms: number) =>
  new ApiError({
    status: 504,
    type: 'upstream_error',
    message: `The app did not answer within ${ms} ms`,
    param: null,
    code: 'app_timeout',
  });

export function appProxyRoutes(d: AppProxyDeps): Route[] {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const handler = (ex: HttpExchange) => proxy(new AppExchange(ex), d, agent);
  // Every method, under the app's path and at the app's root. The handler streams the body upstream itself, as it
  // arrives (body kind 'handler': run at once).
  return ['/apps/:appId/*', '/apps/:appId'].flatMap((pattern) =>
    METHODS.map((method): Route => ({ method, pattern, name: 'app_proxy', body: { kind: 'handler' }, handler })),
  );
}

function proxy(ex: AppExchange, d: AppProxyDeps, agent: http.Agent): Promise<void> {
  const appId = ex.params[0]!;
  const prefix = `/apps/${encodeURIComponent(appId)}`;
  const rawPath = ex.path.startsWith(prefix) ? ex.path.slice(prefix.length) : ex.path.replace(/^\/apps\/[^/]+/, '');
  const upstreamPath = (rawPath === '' ? '/' : rawPath) + (ex.rawQuery ? `?${ex.rawQuery}` : '');
  const hasBody = (ex.contentLength ?? 0) > 0 || ex.header('transfer-encoding') !== undefined;

  const target = d.host.proxyTarget(appId);
  if ('missing' in target) throw appNotFound();
  if ('retryAfter' in target) throw appNotLive(target.retryAfter);
  if (ex.contentLength !== undefined && ex.contentLength > d.bodyLimit) throw payloadTooLarge(d.bodyLimit);

  const headers: Record<string, string | string[]> = {};
  const requestHop = hopByHop(ex.headers);
  for (const [k, raw] of ex.headers) {
    if (requestHop.has(k) || k.startsWith('x-forwarded-')) continue;
    const v = k === 'cookie' ? withoutSessionCookie(raw) : raw; // the dashboard's session is never an app's
    if (v === undefined) continue;
    const prev = headers[k];
    headers[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  if (ex.contentLength !== undefined) headers['content-length'] = String(ex.contentLength);
  else if (hasBody) headers['transfer-encoding'] = 'chunked';
  const chain = d.trustProxy ? ex.header('x-forwarded-for') : undefined;
  headers['x-forwarded-for'] = chain ? `${chain}, ${ex.remoteAddress}` : ex.remoteAddress;
  headers['x-forwarded-proto'] = d.proto;
  headers['x-forwarded-prefix'] = prefix;
  const host = ex.header('host');
  if (host) headers['x-forwarded-host'] = host;

  return new Promise<void>((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      resolve();
    };
    const fail = (err: ApiError) => {
      upstream.destroy();
      if (!ex.committed) ex.sendError(err);
      else ex.close();
      finish();
    };
    const upstream = http.request({
      host: '127.0.0.1',
      port: target.port,
      method: ex.method,
      path: upstreamPath,
      headers,
      agent,
    });
    const headersTimer = setTimeout(() => fail(appTimeout(d.headersTimeoutMs)), d.headersTimeoutMs);
    ex.onAbort(() => {
      clearTimeout(headersTimer);
      upstream.destroy();
      finish();
    });
    upstream.on('error', (err) => {
      clearTimeout(headersTimer);
      if (!finished) fail(appUnreachable(err.message));
    });

    if (hasBody) {
      let size = 0;
      ex.streamBody((chunk, isLast) => {
        if (finished) return;
        size += chunk.length;
        if (size > d.bodyLimit) {
          clearTimeout(headersTimer);
          fail(payloadTooLarge(d.bodyLimit));
          return;
        }
        if (chunk.length > 0 && !upstream.write(chunk)) {
          ex.pauseBody();
          upstream.once('drain', () => ex.resumeBody());
        }
        if (isLast) upstream.end();
      });
    } else upstream.end();

    upstream.on('response', (res) => {
      clearTimeout(headersTimer);
      if (finished) {
        res.destroy();
        return;
      }
      const status = res.statusCode ?? 502;
      const answered: Array<[string, string]> = [];
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
        answered.push([res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!]);
      const responseHop = hopByHop(answered);
      const out = answered.filter(([k, v]) => !responseHop.has(k) && k !== 'date' && !reachesHearth(k, v));
      out.push(APP_SANDBOX_CSP);
      const outHeaders: HeaderList = out;
      if (ex.method === 'HEAD' || status === 204 || status === 304) {
        res.resume();
        ex.send(status, '', outHeaders);
        finish();
        return;
      }
      res.setTimeout(d.idleTimeoutMs, () => fail(appTimeout(d.idleTimeoutMs)));
      let wroteBody = false;
      res.on('data', (chunk: Buffer) => {
        if (finished || chunk.length === 0) return;
        wroteBody = true;
        if (!ex.write(chunk, status, outHeaders)) {
          res.pause();
          void ex.waitWritable().then(() => {
            if (!finished) res.resume();
          });
        }
      });
      res.on('end', () => {
        if (finished) return;
        // An empty answer goes out whole (Content-Length: 0), never as an empty chunk of a chunked one.
        if (wroteBody) ex.end();
        else ex.send(status, '', outHeaders);
        finish();
      });
      res.on('aborted', () => {
        if (!finished) fail(appUnreachable('the app closed the connection mid-answer'));
      });
      res.on('error', () => {
        if (!finished) fail(appUnreachable('the app closed the connection mid-answer'));
      });
    });
  });
}
