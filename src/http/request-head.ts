import { timingSafeEqual } from 'node:crypto';
import type { HttpRequest } from 'uWebSockets.js';
import { newRequestId } from './request-ids.ts';
import { REQUEST_LIMITS } from './request-limits.ts';

export type HeaderList = ReadonlyArray<readonly [string, string]>;

/** Headers only the managed front may set (see EdgeStyle.frontSecret). */
export const FRONT_HEADERS = { secret: 'x-hearth-front', peer: 'x-hearth-peer' } as const;

/** A client-sent x-request-id Hearth echoes and logs (anything else is replaced: logs stay clean). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** A character a header value of ASCII text does not hold (uWS itself refuses the other control characters). */
const NOT_HEADER_TEXT = /[^\t\x20-\x7e]/;
/** Longest textual IP address (an IPv6 address with an embedded IPv4 one and a zone would be longer; HAProxy sends none). */
const MAX_ADDRESS_LENGTH = 45;

/**
 * A request's head as the client sent it: request line, headers, path parameters, the id it is logged under.
 * Copied out of uWS's HttpRequest synchronously in the uWS handler (the HttpRequest dies at the handler's first
 * await); the constructor cannot throw, everything derived from the raw strings (percent-decoding, bounds) happens
 * in the router's guarded path. Immutable after the router set `params`. Thread: the main event loop only.
 */
export class RequestHead {
  /** Upper-case method as sent. */
  readonly method: string;
  /** The raw path (still percent-encoded), without the query. */
  readonly url: string;
  /** The raw query string without `?` ('' when none). */
  readonly query: string;
  /** Every request header in order, names lower-case, repeats kept. Raw: untrusted. */
  readonly headerList: HeaderList;
  /** Raw path parameters as uWS matched them (percent-encoded). */
  readonly rawParams: readonly string[];
  /** Decoded path parameters; filled by the router (guarded) before the handler runs. */
  params: string[] = [];
  readonly startedAt = performance.now();
  /** Sent as `x-request-id` on the answer and logged with it: the client's own id when sane, else `req_<hex>`. */
  readonly requestId: string;
  /** The client's address as the managed front saw it (EdgeStyle.frontSecret), else null. */
  protected readonly frontPeer: string | null;
  private headerMap: Map<string, string> | null = null;
  private bodyDeclared: boolean | null = null;

  /**
   * `frontSecret`: set behind the managed front; its headers are removed from the list either way, and the peer
   * address it sent counts only with the secret.
   */
  constructor(req: HttpRequest, frontSecret: Buffer | undefined, paramCount: number) {
    this.method = req.getCaseSensitiveMethod().toUpperCase();
    this.url = req.getUrl();
    this.query = req.getQuery() ?? '';
    const list: Array<[string, string]> = [];
    req.forEach((k, v) => list.push([k, v]));
    const front = frontSecret === undefined ? { rest: list, peer: null } : takeFrontHeaders(list, frontSecret);
    this.headerList = front.rest;
    this.frontPeer = front.peer;
    let rid: string | undefined;
    for (const [k, v] of this.headerList) {
      if (k === 'x-request-id') {
        rid = v;
        break;
      }
    }
    this.requestId = rid !== undefined && REQUEST_ID.test(rid) ? rid : newRequestId();
    const raw: string[] = [];
    for (let i = 0; i < paramCount; i++) raw.push(req.getParameter(i) ?? '');
    this.rawParams = raw;
  }

  /** Header name (lower-case) -> value; repeated headers joined with ', '. Raw: untrusted. */
  get headers(): ReadonlyMap<string, string> {
    if (this.headerMap === null) {
      const map = new Map<string, string>();
      for (const [k, v] of this.headerList) map.set(k, map.has(k) ? `${map.get(k)}, ${v}` : v);
      this.headerMap = map;
    }
    return this.headerMap;
  }

  /**
   * The name of the first header whose value is not ASCII text (tab, space, 0x21-0x7E), or undefined. uWS decodes
   * values as UTF-8 (U+FFFD for a byte that is not) and drops bytes >= 0x80 at either end of one, so such a value
   * is not the one sent; the router refuses the request (README "Limits").
   */
  get nonAsciiHeader(): string | undefined {
    for (const [k, v] of this.headerList) if (NOT_HEADER_TEXT.test(v)) return k;
    return undefined;
  }

  /** A header's raw value, '' when absent. */
  header(name: string): string {
    return this.headers.get(name) ?? '';
  }

  /** The Authorization header, '' when absent or longer than the edge looks at (README "Limits"). */
  get authorization(): string {
    const v = this.header('authorization');
    return v.length > REQUEST_LIMITS.maxAuthorizationLength ? '' : v;
  }

  /** Headers the session auth and its CSRF check read ('' when absent). */
  get cookie(): string {
    return this.header('cookie');
  }

  get origin(): string {
    return this.header('origin');
  }

  get host(): string {
    return this.header('host');
  }

  get forwardedProto(): string {
    return this.header('x-forwarded-proto');
  }

  get forwardedFor(): string {
    return this.header('x-forwarded-for');
  }

  /**
   * The declared Content-Length, undefined when absent (uWS itself refuses a malformed one). One past 15 digits
   * (beyond exact doubles; uWS 20.57 passes up to 18 on) is Infinity: over every limit, so a 413, never "absent".
   */
  get contentLength(): number | undefined {
    const v = this.headers.get('content-length');
    if (v === undefined || !/^\d+$/.test(v)) return undefined;
    const digits = v.replace(/^0+(?=\d)/, '');
    return digits.length > 15 ? Number.POSITIVE_INFINITY : Number(digits);
  }

  /**
   * Whether the request carries a body (a Content-Length other than 0, or a Transfer-Encoding). A scan of the
   * raw header list: no header map is built on the hot path.
   */
  get hasBody(): boolean {
    if (this.bodyDeclared === null) {
      this.bodyDeclared = false;
      for (const [k, v] of this.headerList) {
        if (k === 'transfer-encoding' || (k === 'content-length' && !/^0+$/.test(v))) {
          this.bodyDeclared = true;
          break;
        }
        if (k === 'content-length') break;
      }
    }
    return this.bodyDeclared;
  }

  get isHead(): boolean {
    return this.method === 'HEAD';
  }
}

/** Removes the managed front's headers from `list`; keeps the peer address when the secret matches. */
function takeFrontHeaders(
  list: Array<[string, string]>,
  secret: Buffer,
): { rest: Array<[string, string]>; peer: string | null } {
  let sent: string | undefined;
  let peer: string | undefined;
  const rest = list.filter(([k, v]) => {
    if (k === FRONT_HEADERS.secret) sent ??= v;
    else if (k === FRONT_HEADERS.peer) peer ??= v;
    else return true;
    return false;
  });
  const given = Buffer.from(sent ?? '');
  const trusted =
    peer !== undefined &&
    peer.length <= MAX_ADDRESS_LENGTH &&
    given.length === secret.length &&
    timingSafeEqual(given, secret);
  return { rest, peer: trusted ? peer! : null };
}
