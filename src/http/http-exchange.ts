import { randomBytes } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { type ApiError, payloadTooLarge } from '../errors/index.ts';
import { statusLine } from './status-text.ts';

/** A client-sent x-request-id Hearth echoes and logs (anything else is replaced: logs stay clean). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A path parameter percent-decoded; a malformed escape (`%E0%A4`) is kept as sent (never a thrown URIError). */
function decodePathParameter(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export type HeaderList = ReadonlyArray<readonly [string, string]>;

/**
 * The one owner of a uWS request/response pair (architecture habit 3). Created synchronously inside the
 * uWS handler: it reads every header it may need and attaches onAborted before any await, because the
 * HttpRequest dies at the handler's first await and an aborted HttpResponse must never be touched.
 * All writes go through `cork`, so they are safe from timers, promises and MessagePort callbacks.
 * Handlers never touch the raw response. Thread: the main event loop only.
 */
export class HttpExchange {
  readonly method: string;
  readonly url: string;
  readonly authorization: string;
  /** Headers the session auth and its CSRF check read ('' when absent). */
  readonly cookie: string;
  readonly origin: string;
  readonly host: string;
  readonly forwardedProto: string;
  readonly forwardedFor: string;
  readonly contentLength: number | undefined;
  readonly params: string[];
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
  private abortHandlers: Array<() => void> | null = null;
  private abortArmed = false;
  private writableWaiter: (() => void) | null = null;
  private bodyStarted = false;
  /** Valid only during the synchronous part of the handler (uWS frees it after): see `requestHead`. */
  private readonly req: HttpRequest;
  /** Headers added to whatever answer this exchange sends (e.g. a key's rate-limit headers). */
  private extraHeaders: HeaderList = [];

  constructor(private readonly res: HttpResponse, req: HttpRequest, paramCount = 0) {
    this.req = req;
    this.method = req.getMethod().toUpperCase();
    this.url = req.getUrl();
    this.authorization = req.getHeader('authorization');
    this.cookie = req.getHeader('cookie');
    this.origin = req.getHeader('origin');
    this.host = req.getHeader('host');
    this.forwardedProto = req.getHeader('x-forwarded-proto');
    this.forwardedFor = req.getHeader('x-forwarded-for');
    const cl = req.getHeader('content-length');
    this.contentLength = cl === '' ? undefined : Number(cl);
    const rid = req.getHeader('x-request-id');
    this.requestId = REQUEST_ID.test(rid) ? rid : `req_${randomBytes(16).toString('hex')}`;
    this.params = [];
    for (let i = 0; i < paramCount; i++) this.params.push(decodePathParameter(req.getParameter(i)));
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

  get closed(): boolean {
    return this.aborted || this.ended;
  }

  /**
   * Reads the whole body, refusing more than `limit` bytes (413) both from Content-Length and as it
   * arrives. Must be called synchronously in the handler (uWS drops body data that has no listener).
   */
  readBody(limit: number): Promise<Buffer> {
    if (this.bodyStarted) throw new Error('body already read');
    this.bodyStarted = true;
    return new Promise((resolve, reject) => {
      if (this.contentLength !== undefined && this.contentLength > limit) {
        reject(payloadTooLarge(limit));
        // Keep draining so uWS can answer; data is discarded.
        this.res.onData(() => {});
        return;
      }
      const parts: Buffer[] = [];
      let size = 0;
      let failed = false;
      this.res.onData((chunk, isLast) => {
        if (failed) return;
        size += chunk.byteLength;
        if (size > limit) {
          failed = true;
          reject(payloadTooLarge(limit));
          return;
        }
        parts.push(Buffer.from(chunk.slice(0)));
        if (isLast) resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
      });
      this.onAbort(() => reject(new Error('client aborted while sending the body')));
    });
  }

  /**
   * Every request header, the query string and the peer address (the app proxy forwards them). Must be
   * called synchronously in the handler, before its first await.
   */
  requestHead(): { headers: Array<[string, string]>; query: string; remoteAddress: string } {
    const headers: Array<[string, string]> = [];
    this.req.forEach((k, v) => headers.push([k, v]));
    return { headers, query: this.req.getQuery() ?? '', remoteAddress: Buffer.from(this.res.getRemoteAddressAsText()).toString() };
  }

  /**
   * Streams the body chunk by chunk (the chunk is copied; `isLast` ends it), instead of `readBody`. Pair
   * with `pauseBody` / `resumeBody` for backpressure. Must be called synchronously in the handler.
   */
  streamBody(onChunk: (chunk: Buffer, isLast: boolean) => void): void {
    if (this.bodyStarted) throw new Error('body already read');
    this.bodyStarted = true;
    this.res.onData((chunk, isLast) => onChunk(Buffer.from(chunk.slice(0)), isLast));
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
    this.res.writeStatus(statusLine(status));
    this.res.writeHeader('x-request-id', this.requestId);
    for (const [k, v] of headers) this.res.writeHeader(k, v);
    for (const [k, v] of this.extraHeaders) this.res.writeHeader(k, v);
  }

  /** Adds headers to the answer this exchange will send, whichever it is (success, error or stream). */
  addHeaders(headers: HeaderList): void {
    if (headers.length > 0) this.extraHeaders = [...this.extraHeaders, ...headers];
  }

  /** The peer's IP address as text. Call it synchronously in the handler (before the response can end). */
  remoteAddress(): string {
    if (this.closed) return '';
    return Buffer.from(this.res.getRemoteAddressAsText()).toString();
  }

  /** Sends a complete response. No-op when the client is gone or the response already ended. */
  send(status: number, body: string, headers: HeaderList, closeConnection = false): void {
    if (this.closed || this.committed) return;
    this.res.cork(() => {
      this.writeHead(status, headers);
      this.res.end(body, closeConnection);
    });
    this.ended = true;
  }

  sendJson(status: number, value: unknown, extraHeaders: HeaderList = []): void {
    this.send(status, JSON.stringify(value), [['content-type', 'application/json'], ...extraHeaders]);
  }

  /** The documented OpenAI error body, with Retry-After when the error carries one. */
  sendError(err: ApiError): void {
    if (this.closed || this.committed) return;
    this.errorCode = err.code ?? err.type;
    const headers: Array<[string, string]> = [['content-type', 'application/json']];
    if (err.retryAfter !== undefined) headers.push(['retry-after', String(err.retryAfter)]);
    if (err.status === 401) headers.push(['www-authenticate', 'Bearer']);
    if (err.status === 405 && Array.isArray(err.details?.allowed)) headers.push(['allow', (err.details.allowed as string[]).join(', ')]);
    // A 413 is sent before the body was read; close so the client stops uploading.
    this.send(err.status, JSON.stringify(err.toBody()), headers, err.status === 413);
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
      ok = this.res.write(chunk);
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
  endStream(last = '', headers: HeaderList = []): void {
    if (this.closed) return;
    this.res.cork(() => {
      if (!this.committed) this.writeHead(200, headers);
      this.res.end(last);
    });
    this.ended = true;
  }

  /** Drops the connection (e.g. a slow stream over its buffer limit). Triggers the abort handlers. */
  close(): void {
    if (this.closed) return;
    this.armAbort(); // res.close() reports through onAborted
    this.res.close();
  }
}
