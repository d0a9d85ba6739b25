import type { ApiError } from '../errors/index.ts';
import type { HeaderList, HttpExchange } from '../http/http-exchange.ts';

/**
 * The dashboard session cookie and the browser checks around it: reading the cookie, building
 * `Set-Cookie` (HttpOnly, SameSite=Strict, Path=/, Secure behind https), and the same-origin test that
 * guards changes made with the cookie (CSRF). Pure functions of what the exchange read synchronously.
 */
export const SESSION_COOKIE = 'hearth_session';

export interface SessionHttpOptions {
  /** `--public-url` (no trailing slash), when set. */
  publicUrl: string | undefined;
  /** Whether X-Forwarded-For names the client (`--trust-proxy`). */
  trustProxy: boolean;
  /** Cookie Max-Age: the session's absolute lifetime, ms. */
  maxAgeMs: number;
}

/**
 * The values of the `hearth_session` cookies in a Cookie header, in order (usually none or one). A malformed one
 * (too long, odd characters) is kept: it resolves to no session, so the caller gets 401 session_expired and the
 * cookie is cleared, rather than being treated as a request with no credentials at all.
 */
export function readSessionCookies(cookieHeader: string): string[] {
  const out: string[] = [];
  if (cookieHeader === '') return out;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    if (value !== '') out.push(value);
  }
  return out;
}

const cookieName = (pair: string) => {
  const eq = pair.indexOf('=');
  return (eq < 0 ? pair : pair.slice(0, eq)).trim();
};

/**
 * A Cookie header as an app behind the proxy may see it: without the session cookie (apps share the
 * dashboard's origin, so browsers send it to them too). Untouched when it holds none; undefined when
 * nothing else is left.
 */
export function withoutSessionCookie(cookieHeader: string): string | undefined {
  const parts = cookieHeader.split(';');
  if (!parts.some((p) => cookieName(p) === SESSION_COOKIE)) return cookieHeader;
  const kept = parts.map((p) => p.trim()).filter((p) => p !== '' && cookieName(p) !== SESSION_COOKIE);
  return kept.length === 0 ? undefined : kept.join('; ');
}

/** Whether a Set-Cookie value sets the session cookie (an app's answer must not: it would fix the dashboard's session). */
export function setsSessionCookie(setCookie: string): boolean {
  return cookieName(setCookie.split(';', 1)[0]!) === SESSION_COOKIE;
}

/** Whether the client reached the service over https (by the public URL or the proxy's X-Forwarded-Proto). */
export function isHttps(ex: HttpExchange, o: SessionHttpOptions): boolean {
  return (
    o.publicUrl?.startsWith('https://') === true || ex.forwardedProto.split(',')[0]!.trim().toLowerCase() === 'https'
  );
}

export function sessionCookie(ex: HttpExchange, o: SessionHttpOptions, token: string): string {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(o.maxAgeMs / 1000)}${isHttps(ex, o) ? '; Secure' : ''}`;
}

export function clearedSessionCookie(ex: HttpExchange, o: SessionHttpOptions): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${isHttps(ex, o) ? '; Secure' : ''}`;
}

/**
 * The service edge's EdgeStyle.errorHeaders: a `session_expired` answer, from whichever route, clears the
 * cookie, so the browser stops presenting a session that has ended.
 */
export function sessionErrorHeaders(o: SessionHttpOptions): (err: ApiError, ex: HttpExchange) => HeaderList {
  return (err, ex) => (err.code === 'session_expired' ? [['set-cookie', clearedSessionCookie(ex, o)]] : []);
}

/**
 * Whether the request's Origin is the service's own: the public URL's origin, or http(s)://<Host> of the
 * request itself. A missing or opaque (`null`) Origin is not.
 */
export function isSameOrigin(ex: HttpExchange, o: SessionHttpOptions): boolean {
  const origin = ex.origin.toLowerCase();
  if (origin === '' || origin === 'null') return false;
  if (o.publicUrl !== undefined) {
    try {
      if (new URL(o.publicUrl).origin.toLowerCase() === origin) return true;
    } catch {
      // an unparsable public URL matches nothing
    }
  }
  const host = ex.host.toLowerCase();
  return host !== '' && (origin === `http://${host}` || origin === `https://${host}`);
}

/** The client address for sign-in limits: the socket's, or with `trustProxy` the first X-Forwarded-For entry. */
export function clientAddress(ex: HttpExchange, o: SessionHttpOptions): string {
  if (o.trustProxy) {
    const first = ex.forwardedFor.split(',')[0]!.trim();
    if (first !== '') return first;
  }
  return ex.remoteAddress();
}
