import { describe, expect, it } from 'vitest';
import type { HttpExchange } from '../../../src/http/http-exchange.ts';
import { originMismatch, sessionExpired, unauthorized } from '../../../src/errors/index.ts';
import {
  clearedSessionCookie,
  clientAddress,
  isSameOrigin,
  readSessionCookies,
  sessionCookie,
  sessionErrorHeaders,
} from '../../../src/accounts/session-cookie.ts';

const ex = (h: Partial<Pick<HttpExchange, 'origin' | 'host' | 'forwardedProto' | 'forwardedFor'>>) =>
  ({
    origin: '',
    host: '',
    forwardedProto: '',
    forwardedFor: '',
    remoteAddress: () => '10.1.1.1',
    ...h,
  }) as unknown as HttpExchange;
const opts = (publicUrl?: string, trustProxy = false) => ({ publicUrl, trustProxy, maxAgeMs: 3_600_000 });

describe('session cookie helpers', () => {
  it('reads every hearth_session value among other cookies, in order, odd ones included', () => {
    expect(readSessionCookies('a=1; hearth_session=abc_DEF-123; b=2')).toEqual(['abc_DEF-123']);
    expect(readSessionCookies('hearth_sessionx=1; xhearth_session=2')).toEqual([]);
    // A malformed value is still the session cookie: it resolves to no session (401 session_expired, the cookie
    // cleared), not to a request without credentials (401 invalid_api_key, the bad cookie kept).
    expect(readSessionCookies('hearth_session=bad value;')).toEqual(['bad value']);
    expect(readSessionCookies(`hearth_session=${'a'.repeat(5000)}`)).toEqual(['a'.repeat(5000)]);
    expect(readSessionCookies('hearth_session=; b=2')).toEqual([]);
    expect(readSessionCookies('')).toEqual([]);
    // A parent-domain cookie beside Hearth's own: both, for the first live one to count.
    expect(readSessionCookies('hearth_session=planted; hearth_session=mine')).toEqual(['planted', 'mine']);
  });

  it('sets HttpOnly, SameSite=Strict, Path=/ and Max-Age; Secure behind https only', () => {
    expect(sessionCookie(ex({}), opts(), 'tok')).toBe(
      'hearth_session=tok; Path=/; HttpOnly; SameSite=Strict; Max-Age=3600',
    );
    expect(sessionCookie(ex({ forwardedProto: 'https' }), opts(), 'tok')).toMatch(/; Secure$/);
    expect(sessionCookie(ex({}), opts('https://hearth.example'), 'tok')).toMatch(/; Secure$/);
    expect(clearedSessionCookie(ex({}), opts())).toBe('hearth_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0');
  });

  it('error headers of the edge: session_expired clears the cookie (Secure behind https), other errors add nothing', () => {
    expect(sessionErrorHeaders(opts())(sessionExpired(), ex({}))).toEqual([
      ['set-cookie', 'hearth_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0'],
    ]);
    expect(sessionErrorHeaders(opts('https://hearth.example'))(sessionExpired(), ex({}))).toEqual([
      ['set-cookie', expect.stringMatching(/Max-Age=0; Secure$/)],
    ]);
    for (const err of [unauthorized(), originMismatch()]) expect(sessionErrorHeaders(opts())(err, ex({}))).toEqual([]);
  });

  it('same origin: the public URL’s origin or the request’s own host; never missing, null or foreign', () => {
    expect(isSameOrigin(ex({ origin: 'http://127.0.0.1:8080', host: '127.0.0.1:8080' }), opts())).toBe(true);
    expect(
      isSameOrigin(ex({ origin: 'https://hearth.example', host: 'internal:8080' }), opts('https://hearth.example')),
    ).toBe(true);
    expect(isSameOrigin(ex({ origin: 'https://hearth.example', host: 'internal:8080' }), opts())).toBe(false);
    expect(isSameOrigin(ex({ origin: 'http://127.0.0.1:9999', host: '127.0.0.1:8080' }), opts())).toBe(false);
    expect(
      isSameOrigin(ex({ origin: 'http://evil.example', host: '127.0.0.1:8080' }), opts('https://hearth.example')),
    ).toBe(false);
    expect(isSameOrigin(ex({ origin: 'null', host: 'null' }), opts())).toBe(false);
    expect(isSameOrigin(ex({ origin: '', host: '127.0.0.1:8080' }), opts())).toBe(false);
  });

  it('the client address is the socket’s unless the proxy is trusted', () => {
    expect(clientAddress(ex({ forwardedFor: '203.0.113.9, 10.0.0.1' }), opts())).toBe('10.1.1.1');
    expect(clientAddress(ex({ forwardedFor: '203.0.113.9, 10.0.0.1' }), opts(undefined, true))).toBe('203.0.113.9');
    expect(clientAddress(ex({}), opts(undefined, true))).toBe('10.1.1.1');
  });
});
