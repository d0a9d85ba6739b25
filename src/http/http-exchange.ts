import { timingSafeEqual } from 'node:crypto';
import { newRequestId } from './request-ids.ts';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { type ApiError, payloadTooLarge } from '../errors/index.ts';
import { parseJsonBody } from './json-body.ts';
import { REQUEST_LIMITS } from './request-limits.ts';
import { statusLine } from './status-text.ts';
import { uwsClosesAnsweredIdle } from './uws.ts';

export type HeaderList = ReadonlyArray<readonly [string, string]>;

/** A client-sent x-request-id Hearth echoes and logs (anything else is replaced: logs stay clean). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** A character a header value of ASCII text does not hold (uWS itself refuses the other control characters). */
const NOT_HEADER_TEXT = /[^\t\x20-\x7e]/;
/** Longest textual IP address (an IPv6 address with an embedded IPv4 one and a zone would be longer; HAProxy sends none). */
const MAX_ADDRESS_LENGTH = 45;

/**
 * How one edge writes its JSON answers. The service answers errors in OpenAI's shape, the tool-server kit
 * as `{"error": "...", "code": ...}`; everything else about the edge is the same.
 */
export interface EdgeStyle {
  /** Headers of every JSON answer (content-type first). */
  jsonHeaders: HeaderList;
  /** The JSON value of an error answer. */
  errorBody(err: ApiError): unknown;
  /** Headers an error answer carries besides the generic ones (the service: a cleared session cookie on `session_expired`). */
  errorHeaders?(err: ApiError, ex: HttpExchange): HeaderList;
  /**
   * Set behind the managed HAProxy front (haproxy-front.ts): a request carrying this secret in `x-hearth-front`
   * came through the front, and its `x-hearth-peer` is the client's address. Both headers are removed from the
   * request either way (nothing downstream, an app included, ever sees them); without the secret the socket's
   * address counts.
   */
  frontSecret?: Buffer;
  /**
   * Largest request body the edge reads to its end before answering (default DEFAULT_DRAIN_LIMIT; the service
   * uses its largest route limit). See HttpExchange.send.
   */
  drainLimit?: number;
}

/** EdgeStyle.drainLimit when the edge sets none. */
const DEFAULT_DRAIN_LIMIT = 1 << 20;
/**
 * How long an answer waits for a body that stopped arriving (no byte for this long) before it goes out anyway
 * (HttpExchange.send): a client uploading at any usable pace sends more often; one that declared a length and
 * stalled gets its answer instead of waiting for the front's or uWS's time-out.
 */
export const BODY_STALL_MS = 500;

/** Headers only the managed front may set (see EdgeStyle.frontSecret). */
export const FRONT_HEADERS = { secret: 'x-hearth-front', peer: 'x-hearth-peer' } as const;

/**
 * The request body a route reads, declared in its route table entry (router.ts). `json`: parsed
 * (depth-bounded) by `ex.json()`; `raw`: bytes by `ex.bytes()`; both read by the router, at most `limit`
 * bytes (413 past it, declared or observed). `handler`: the handler reads it itself, synchronously
 * (`readBody`, or `streamBody` for a proxy), because what to read depends on the request.
 */
export type BodySpec = { kind: 'json' | 'raw'; limit: number } | { kind: 'handler' };

/** Thrown into a pending body read when the client went away. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
}

/** Headers uWS writes itself (or that belong to the connection, not the answer). */
const OWNED_BY_UWS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);
const OWNED_LENGTHS = new Set([...OWNED_BY_UWS].map((name) => name.length));

/** Whether `name` (any case) is OWNED_BY_UWS; lower-cases only names of those lengths (per answer header, hot). */
function ownedByUws(name: string): boolean {
  return OWNED_LENGTHS.has(name.length) && OWNED_BY_UWS.has(name.toLowerCase());
}

/**
 * The one owner of a uWS request/response pair (architecture habit 3), for the service, the tool-server kit
 * and any proxy built on them. Created synchronously inside the uWS handler by the router. The constructor
 * only copies raw strings out of the HttpRequest (it dies at the handler's first await) and cannot throw:
 * everything derived from them (percent-decoding, bounds, body parsing) happens in the router's guarded
 * path, so a hostile request becomes an error answer, never an exception in a uWS callback.
 * All writes go through `cork`, so they are safe from timers, promises and MessagePort callbacks, and
 * become no-ops once the client is gone or the answer ended. A HEAD request gets status and headers only.
 * Thread: the main event loop only.
 */
export class HttpExchange {
  /** Upper-case method as sent. */
  readonly method: string;
  /** The raw path (still percent-encoded), without the query. */
  readonly url: string;
  /** The raw query string without `?` ('' when none). */
  readonly query: string;
  /** Every request header in order, names lower-case, repeats kept. Raw: untrusted. */
  readonly headerList: ReadonlyArray<readonly [string, string]>;
  private headerMap: Map<string, string> | null = null;
  /** The client's address as the managed front saw it (EdgeStyle.frontSecret), else null. */
  private frontPeer: string | null = null;
  /** Raw path parameters as uWS matched them (percent-encoded). */
  readonly rawParams: readonly string[];
  /** Decoded path parameters; filled by the router (guarded) before the handler runs. */
  params: string[] = [];
  readonly startedAt = performance.now();
  /** Sent as `x-request-id` on the answer and logged with it: the client's own id when sane, else `req_<hex>`. */
  readonly requestId: string;
  /** Set once the client went away; nothing more may be written. */
  aborted = false;
  /** Set once the response has ended. */
  ended = false;
  /** Status sent (or about to be), for logs and metrics. */
  status = 0;
  /** The `code` of the error answer sent, for metrics. */
  errorCode: string | null = null;
  private committed = false;
  private closeAfter = false;
  private abortHandlers: Array<() => void> | null = null;
  private abortArmed = false;
  private writableWaiter: (() => void) | null = null;
  /** Headers added to whatever answer this exchange sends (e.g. a key's rate-limit headers). */
  private extraHeaders: HeaderList = [];
  /** 'held': paused by holdBody until a reader is attached (or an answer drops it). */
  private bodyState: 'none' | 'held' | 'reading' | 'read' = 'none';
  /** What uWS delivered while the body was held, for the reader attached next (holdBody). */
  private held: Array<{ chunk: Buffer; isLast: boolean }> | null = null;
  /** Body bytes seen so far by the exchange's own readers (readBody, drainBody), and whether a handler streams it. */
  private bodyBytes = 0;
  private bodyStreamed = false;
  /** hasBody, once scanned (the router asks before and after the handler). */
  private bodyDeclared: boolean | null = null;
  /** An answer decided while the body was still arriving: sent when it has arrived, or early when it stalls (see send). */
  private deferred: ((stalled: boolean) => void) | null = null;
  /** Restarted by each body read while an answer is deferred; fires after BODY_STALL_MS without one. */
  private stallTimer: NodeJS.Timeout | null = null;
  private body: Promise<Buffer> | null = null;
  private parsed: Promise<unknown> | null = null;
  private controller: AbortController | null = null;
  private settled: Promise<void> | null = null;
  private settle: (() => void) | null = null;

  constructor(
    private readonly res: HttpResponse,
    req: HttpRequest,
    private readonly style: EdgeStyle,
    paramCount = 0,
  ) {
    this.method = req.getCaseSensitiveMethod().toUpperCase();
    this.url = req.getUrl();
    this.query = req.getQuery() ?? '';
    const list: Array<[string, string]> = [];
    req.forEach((k, v) => list.push([k, v]));
    this.headerList = style.frontSecret === undefined ? list : this.takeFrontHeaders(list, style.frontSecret);
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

  /** Removes the managed front's headers from `list`; keeps the peer address when the secret matches. */
  private takeFrontHeaders(list: Array<[string, string]>, secret: Buffer): Array<[string, string]> {
    let sent: string | undefined;
    let peer: string | undefined;
    const rest = list.filter(([k, v]) => {
      if (k === FRONT_HEADERS.secret) sent ??= v;
      else if (k === FRONT_HEADERS.peer) peer ??= v;
      else return true;
      return false;
    });
    const given = Buffer.from(sent ?? '');
    if (peer !== undefined && peer.length <= MAX_ADDRESS_LENGTH && given.length === secret.length && timingSafeEqual(given, secret)) this.frontPeer = peer;
    return rest;
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
   * Every request header (repeats kept), the query string and the peer address, as the app proxy forwards
   * them. Call it synchronously in the handler (the peer address needs the live response).
   */
  requestHead(): { headers: Array<[string, string]>; query: string; remoteAddress: string } {
    return { headers: this.headerList.map(([k, v]) => [k, v]), query: this.query, remoteAddress: this.remoteAddress() };
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
   * The peer's IP address as text: the socket's, or behind the managed front the address the front saw. Call it
   * synchronously in the handler (before the response can end).
   */
  remoteAddress(): string {
    if (this.frontPeer !== null) return this.frontPeer;
    if (this.closed) return '';
    return Buffer.from(this.res.getRemoteAddressAsText()).toString();
  }

  /** Adds headers to the answer this exchange will send, whichever it is (success, error or stream). */
  addHeaders(headers: HeaderList): void {
    if (headers.length > 0) this.extraHeaders = [...this.extraHeaders, ...headers];
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

  get isHead(): boolean {
    return this.method === 'HEAD';
  }

  /**
   * Attaches uWS's onAborted. The router calls it when a handler returns (still inside the uWS callback,
   * so before any await can resume) without having ended the response; a response answered synchronously,
   * the hot path of GET routes, never pays for it. Idempotent.
   */
  armAbort(): void {
    if (this.abortArmed || this.ended) return;
    this.abortArmed = true;
    this.res.onAborted(() => {
      this.aborted = true;
      this.wakeWritable();
      this.controller?.abort(new ClientGoneError('client disconnected'));
      this.settle?.();
      const handlers = this.abortHandlers;
      this.abortHandlers = null;
      if (handlers) for (const h of handlers) h();
    });
  }

  /** Runs `h` when the client disconnects before the response ended (never after a normal end). */
  onAbort(h: () => void): void {
    if (this.aborted) h();
    else if (!this.ended) (this.abortHandlers ??= []).push(h);
  }

  /** Fires when the client disconnects before the response ended. */
  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(new ClientGoneError('client disconnected'));
    }
    return this.controller.signal;
  }

  /** Settles once, when the response ended or the client went away. */
  get done(): Promise<void> {
    if (this.settled === null) {
      this.settled = new Promise<void>((resolve) => (this.settle = resolve));
      if (this.closed) this.settle!();
    }
    return this.settled;
  }

  get closed(): boolean {
    return this.aborted || this.ended;
  }

  /** Ask for `connection: close` on the answer (e.g. the server is draining). */
  closeConnectionAfterResponse(): void {
    this.closeAfter = true;
  }

  /**
   * Starts reading the whole body, refusing more than `limit` bytes (413) both from Content-Length and as it
   * arrives. Must be called synchronously in the uWS handler (uWS drops body data that has no listener); the
   * router does it for routes that declare a body. The body resolves one event-loop turn after its last
   * byte, and only if the client is still there: uWS refuses a request pipelined behind one still being
   * answered by closing the connection in the same turn, and a request whose connection is gone must not
   * run (nobody would learn its outcome; a retrying client would duplicate it).
   */
  readBody(limit: number): Promise<Buffer> {
    if (this.body !== null) return this.body;
    if (this.bodyState !== 'none' && this.bodyState !== 'held') throw new Error('body already streamed');
    this.bodyState = 'reading';
    this.body = new Promise<Buffer>((resolve, reject) => {
      const declared = this.contentLength;
      if (declared !== undefined && declared > limit) {
        reject(payloadTooLarge(limit));
        this.discardBody(); // the 413 waits for it within the drain bound, then closes the connection
        return;
      }
      const parts: Buffer[] = [];
      let size = 0;
      let failed = false;
      this.onBody((chunk, isLast) => {
        if (isLast) this.bodyState = 'read';
        this.bodyProgress(chunk.byteLength, isLast);
        if (failed) return;
        size += chunk.byteLength;
        if (size > limit) {
          failed = true;
          reject(payloadTooLarge(limit));
          return;
        }
        parts.push(Buffer.from(chunk)); // a copy: the chunk is a view of uWS's buffer, neutered when this callback returns
        if (!isLast) return;
        const whole = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
        setImmediate(() => (this.aborted ? reject(new ClientGoneError('client disconnected')) : resolve(whole)));
      });
      this.onAbort(() => reject(new ClientGoneError('client disconnected while sending the body')));
    });
    this.body.catch(() => {}); // observed by whoever awaits it; this only prevents an early 'unhandled' report
    return this.body;
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

  /**
   * Reads and discards a body that no route reads (the router calls it synchronously, for a route without a body
   * or a refused request), so that the answer waits for it (see send). No-op when a reader is attached.
   */
  drainBody(): void {
    if (this.bodyState !== 'none' || !this.hasBody) return;
    this.bodyState = 'reading';
    this.discardBody();
  }

  /**
   * Holds the request body while the handler awaits something before it decides to read it (credentials that may be
   * on their way from another replica: fresh-credentials.ts). Call synchronously in the handler (uWS drops body data
   * that has no listener). The socket is paused at once; what uWS had already read (at most its receive buffer) is
   * kept and handed, in order, to the reader attached next (readBody, streamBody), which resumes the socket. An
   * answer sent while the body is held reads and drops it like any unread body (see send). No-op without a body.
   */
  holdBody(): void {
    if (this.bodyState !== 'none' || !this.hasBody) return;
    this.bodyState = 'held';
    const held: Array<{ chunk: Buffer; isLast: boolean }> = [];
    this.held = held;
    this.res.onData((chunk, isLast) => held.push({ chunk: Buffer.from(chunk.slice(0)), isLast }));
    this.res.pause();
  }

  /**
   * Attaches the body's reader: first what holdBody kept (then the socket reads again), then uWS's chunks as they
   * come. A chunk is only valid during the call (a view of uWS's buffer): a reader that keeps it copies it.
   */
  private onBody(handler: (chunk: Buffer, isLast: boolean) => void): void {
    const live = (chunk: ArrayBuffer, isLast: boolean) => handler(Buffer.from(chunk), isLast);
    const held = this.held;
    this.held = null;
    if (held === null) {
      this.res.onData(live);
      return;
    }
    if (this.aborted) return; // the client left while the body was held: the reader's abort handler answers
    let ended = false;
    for (const { chunk, isLast } of held) {
      handler(chunk, isLast);
      ended ||= isLast;
    }
    if (this.aborted) return;
    if (!ended) this.res.onData(live);
    this.res.resume(); // also once the body ended: a paused keep-alive socket reads no next request
  }

  private discardBody(): void {
    this.onBody((chunk, isLast) => {
      if (isLast) this.bodyState = 'read';
      this.bodyProgress(chunk.byteLength, isLast);
    });
  }

  /** Counts body bytes; at the body's end, or once past the drain bound, sends an answer that was waiting. */
  private bodyProgress(bytes: number, isLast: boolean): void {
    this.bodyBytes += bytes;
    if (this.deferred === null) return;
    if (isLast || this.bodyBytes > this.drainLimit) this.sendDeferred(false);
    else this.stallTimer?.refresh();
  }

  /** Sends the answer that was waiting for the body: after it (`stalled` false) or because it stopped coming. */
  private sendDeferred(stalled: boolean): void {
    const send = this.deferred;
    this.dropDeferred();
    send?.(stalled);
  }

  private dropDeferred(): void {
    this.deferred = null;
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }

  private get drainLimit(): number {
    return this.style.drainLimit ?? DEFAULT_DRAIN_LIMIT;
  }

  /**
   * Whether an answer must wait for the rest of the body: the exchange reads it (a handler's own stream is its
   * business), it is still arriving, and it fits the drain bound (declared and as counted).
   */
  private waitsForBody(): boolean {
    if (this.bodyState !== 'reading' || this.bodyStreamed) return false;
    const declared = this.contentLength;
    return (declared === undefined || declared <= this.drainLimit) && this.bodyBytes <= this.drainLimit;
  }

  /** The body of a route declared `body: {kind: 'raw'}`. */
  bytes(): Promise<Buffer> {
    if (this.body === null) throw new Error('this route declares no body');
    return this.body;
  }

  /** The parsed body of a route declared `body: {kind: 'json'}`; undefined for an empty body. 400 on bad JSON. */
  json(): Promise<unknown> {
    if (this.body === null) throw new Error('this route declares no body');
    this.parsed ??= this.body.then((bytes) => parseJsonBody(bytes));
    this.parsed.catch(() => {});
    return this.parsed;
  }

  /**
   * Streams the body chunk by chunk (each chunk copied; `isLast` ends it) instead of reading it whole: for a
   * route declared `body: {kind: 'handler'}`, called synchronously in the handler. The chunks arrive as they
   * come (a proxy forwards them at once); the limit and any deferral are the caller's. Pair with
   * `pauseBody` / `resumeBody` for backpressure.
   */
  streamBody(onChunk: (chunk: Buffer, isLast: boolean) => void): void {
    if (this.bodyState !== 'none' && this.bodyState !== 'held') throw new Error('body already read');
    this.bodyState = 'reading';
    this.bodyStreamed = true;
    this.onBody((chunk, isLast) => {
      if (isLast) this.bodyState = 'read';
      onChunk(Buffer.from(chunk), isLast); // a copy (see onBody)
    });
  }

  /** Stops reading the socket (backpressure on an upload). Pair with `resumeBody`, also after the response ended: a paused keep-alive socket reads no next request. */
  pauseBody(): void {
    if (!this.closed) this.res.pause();
  }

  resumeBody(): void {
    if (!this.aborted) this.res.resume();
  }

  private writeHead(status: number, headers: HeaderList): void {
    this.status = status;
    this.committed = true;
    if (status !== 200) this.res.writeStatus(statusLine(status)); // uWS writes `200 OK` itself
    this.res.writeHeader('x-request-id', this.requestId);
    for (const [k, v] of headers) if (!ownedByUws(k)) this.res.writeHeader(k, v);
    for (const [k, v] of this.extraHeaders) this.res.writeHeader(k, v);
  }

  private finishEnd(): void {
    this.ended = true;
    this.settle?.();
  }

  /**
   * Sends a complete response. No-op when the client is gone or the response already ended. An answer decided
   * while the request body is still arriving (an auth failure, a 404, a 413: behind the front, or counted) is sent
   * once the body has arrived whole, within the drain bound: a peer that closes with unread bytes sends a reset,
   * which can destroy the answer on its way (the HTTP front closes each exchange's connection after its answer).
   * If the body stops arriving (no byte for BODY_STALL_MS) the answer goes out then (answerBeforeBody): nothing
   * is in flight to cause a reset, and a client that declared more than it sends is not kept waiting. The
   * connection is closed after an answer when asked to, or when the request body was not read to its end (the
   * connection's framing is then unknown).
   */
  send(status: number, body: string | Uint8Array, headers: HeaderList, closeConnection = false): void {
    if (this.closed || this.committed) return;
    if (this.bodyState === 'held') {
      this.bodyState = 'reading';
      this.discardBody(); // a held body nobody will read: dropped, the answer waits for it as for any other
    }
    // Without the front only: through HAProxy 2.6 an answer complete under an upload still on its way is lost to a
    // reset (18 of 20 whole 1.5 MB chat bodies lost their 413 that way; HAProxy drains the rest of a request after an
    // early answer only from 3.0); there the 413 waits for the body like other answers, or for the body to stall.
    // uWS 20.57 never closes such a connection by itself (uws.ts): there the 413 closes it (end(body, true): its
    // answer, then a FIN; 20.57 writes a chunked answer's close wrongly, as a header after the body).
    if (status === 413 && this.bodyState === 'reading' && !this.bodyStreamed && this.style.frontSecret === undefined) {
      if (uwsClosesAnsweredIdle || this.isHead) return this.answerBeforeBody(status, body, headers);
      return this.answerAndClose(status, body, headers);
    }
    if (status === 413 && !this.isHead && this.waitsForBody()) return this.answerAheadOfBody(status, body, headers);
    if (this.waitsForBody()) {
      this.armAbort(); // uWS must see a pending response has an abort handler (else it terminates the process)
      this.committed = true; // later answers are ignored, as after a sent one
      this.status = status;
      this.deferred = (stalled) => {
        this.committed = false;
        if (stalled) this.answerBeforeBody(status, body, headers);
        else this.send(status, body, headers, closeConnection);
      };
      this.stallTimer = setTimeout(() => this.sendDeferred(true), BODY_STALL_MS);
      this.onAbort(() => this.dropDeferred());
      return;
    }
    const close = closeConnection || this.closeAfter || this.bodyState === 'reading';
    this.res.cork(() => {
      this.writeHead(status, headers);
      if (this.isHead) {
        // HEAD: the GET answer's headers, its length, no body (a kept-alive client would read it as the next answer).
        // This uWS build (v20.30) mishandles any argument to endWithoutBody (it then counts the response as
        // unanswered and aborts the process), so the length is a plain header and the connection stays open.
        this.res.writeHeader('content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
        this.res.endWithoutBody();
      } else this.res.end(body, close);
    });
    this.finishEnd();
  }

  /**
   * Behind the front, a 413 while the body is still arriving: its head and JSON go out at once, as a chunked answer
   * whose last chunk waits for the body (within the drain bound) or for it to stall (BODY_STALL_MS). HAProxy 2.6
   * closes the client's connection once an answer is complete, and a close under an upload still on its way resets
   * it (see send); an answer not yet complete keeps the upload flowing to Hearth, which drops it. The client reads
   * the status and the error at once (and may stop uploading); HAProxy closes its connection after the last chunk
   * once the declared body has passed, or once the client has been silent for the front's `timeout client` (10 s).
   */
  private answerAheadOfBody(status: number, body: string | Uint8Array, headers: HeaderList): void {
    this.armAbort(); // see send
    this.committed = true;
    this.res.cork(() => {
      this.writeHead(status, headers);
      this.res.writeHeader('connection', 'close');
      this.res.write(body);
    });
    this.deferred = () => {
      if (!this.closed) this.res.cork(() => this.res.end(undefined, false));
      this.finishEnd();
    };
    this.stallTimer = setTimeout(() => this.sendDeferred(true), BODY_STALL_MS);
    this.onAbort(() => this.dropDeferred());
  }

  /**
   * An answer while the body is still arriving: without the front a 413 at once, decided from the head (a declared
   * length over the limit) or from the bytes counted so far, however much is still to come; in both modes any
   * deferred answer whose body stalled (see send). The socket stays open and the rest of the body is read and
   * dropped: a close while the peer still sends resets it (uWS's end(body, true)), and the reset can destroy the
   * answer on its way. The answer says `connection: close` and the client closes after reading it (or uWS's idle
   * time-out does; behind the front HAProxy keeps a stalled client's connection until the rest of its declared body,
   * passed on here and dropped, or its client time-out). A client that sends the rest anyway only costs reads.
   */
  private answerBeforeBody(status: number, body: string | Uint8Array, headers: HeaderList): void {
    if (this.closed) return;
    this.res.cork(() => {
      this.writeHead(status, headers);
      this.res.writeHeader('connection', 'close');
      if (this.isHead) {
        this.res.writeHeader('content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
        this.res.endWithoutBody(); // see send
      } else this.res.end(body, false);
    });
    this.finishEnd();
  }

  /** uWS 20.57 without the front: a 413 decided before its body arrived, then the connection shut (see send). */
  private answerAndClose(status: number, body: string | Uint8Array, headers: HeaderList): void {
    if (this.closed) return;
    this.res.cork(() => {
      this.writeHead(status, headers);
      this.res.end(body, true);
    });
    this.finishEnd();
  }

  sendJson(status: number, value: unknown, extraHeaders: HeaderList = []): void {
    this.sendJsonText(status, JSON.stringify(value), extraHeaders);
  }

  /** `json` is already serialized. */
  sendJsonText(status: number, json: string, extraHeaders: HeaderList = []): void {
    this.send(status, json, extraHeaders.length === 0 ? this.style.jsonHeaders : [...this.style.jsonHeaders, ...extraHeaders]);
  }

  /** The edge's error body (EdgeStyle), with Retry-After, WWW-Authenticate, Allow and the edge's own error headers where they apply. */
  sendError(err: ApiError): void {
    if (this.closed || this.committed) return;
    this.errorCode = err.code ?? err.type;
    const headers: Array<readonly [string, string]> = [];
    if (err.retryAfter !== undefined) headers.push(['retry-after', String(err.retryAfter)]);
    if (err.status === 401) headers.push(['www-authenticate', 'Bearer']);
    if (err.status === 405 && Array.isArray(err.details?.allowed)) headers.push(['allow', (err.details.allowed as string[]).join(', ')]);
    if (this.style.errorHeaders) headers.push(...this.style.errorHeaders(err, this));
    // A 413 is sent before the body was read; close so the client stops uploading.
    this.send(err.status, JSON.stringify(this.style.errorBody(err)), [...this.style.jsonHeaders, ...headers], err.status === 413);
  }

  /** Whether status and headers went out (a streamed response is committed after its first write). */
  get isCommitted(): boolean {
    return this.committed;
  }

  /**
   * Streaming: writes status + headers (first call) and a chunk. Returns false when uWS built up
   * backpressure: the caller must stop and `await waitWritable()`. The chunk itself is always buffered.
   */
  writeChunk(chunk: string | Uint8Array, status = 200, headers: HeaderList = []): boolean {
    if (this.closed) return false;
    let ok = true;
    this.res.cork(() => {
      if (!this.committed) this.writeHead(status, headers);
      if (!this.isHead) ok = this.res.write(chunk); // HEAD: headers only, the chunks are dropped
    });
    return ok;
  }

  /** Resolves when uWS drained its buffer for this response, or when the client went away. */
  waitWritable(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.writableWaiter = resolve;
      this.res.onWritable(() => {
        this.wakeWritable();
        return true;
      });
    });
  }

  private wakeWritable(): void {
    const w = this.writableWaiter;
    this.writableWaiter = null;
    w?.();
  }

  /** Ends a streamed response (optionally with a last chunk). Idempotent. */
  endStream(last: string | Uint8Array = '', headers: HeaderList = []): void {
    if (this.closed) return;
    this.res.cork(() => {
      if (!this.committed) this.writeHead(200, headers);
      if (this.isHead) this.res.endWithoutBody();
      else this.res.end(last, this.closeAfter);
    });
    this.finishEnd();
  }

  /** Drops the connection (e.g. a slow stream over its buffer limit). Triggers the abort handlers. */
  close(): void {
    if (this.closed) return;
    this.armAbort(); // res.close() reports through onAborted
    this.res.close();
  }
}
