import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { ApiError } from '../errors/index.ts';
import { BodyReader, type BodyState } from './body-reader.ts';
import { type HeaderList, RequestHead } from './request-head.ts';
import { ResponseWriter } from './response-writer.ts';
import { uwsClosesAnsweredIdle } from './uws.ts';

export { BODY_STALL_MS, ClientGoneError } from './body-reader.ts';
export { FRONT_HEADERS, type HeaderList } from './request-head.ts';

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
 * Longest a connection stays open after an early 413 to read and drop the rest of its body (answerThenLinger), as
 * nginx's `lingering_time`; a body that stops arriving (BODY_STALL_MS without a byte) closes it sooner.
 */
export const LINGER_MS = 30_000;

/**
 * The request body a route reads, declared in its route table entry (router.ts). `json`: parsed
 * (depth-bounded) by `ex.json()`; `raw`: bytes by `ex.bytes()`; both read by the router, at most `limit`
 * bytes (413 past it, declared or observed). `handler`: the handler reads it itself, synchronously
 * (`readBody`, or `streamBody` for a proxy), because what to read depends on the request.
 */
export type BodySpec = { kind: 'json' | 'raw'; limit: number } | { kind: 'handler' };

/**
 * The one owner of a uWS request/response pair (architecture habit 3), for the service, the tool-server kit and any
 * proxy built on them: the request's head (what it extends: RequestHead), its body (a BodyReader, whose state is one
 * explicit union) and its answer (a ResponseWriter), and the one rule that joins them: when an answer goes out
 * while the body is still arriving (`send`). Created synchronously inside the uWS handler by the router; the
 * constructor only copies raw strings out of the HttpRequest and cannot throw, so a hostile request becomes an error
 * answer in the router's guarded path, never an exception in a uWS callback. Thread: the main event loop only.
 */
export class HttpExchange extends RequestHead {
  /** The `code` of the error answer sent, for metrics. */
  errorCode: string | null = null;
  private readonly body: BodyReader;
  private readonly answer: ResponseWriter;

  constructor(
    res: HttpResponse,
    req: HttpRequest,
    private readonly style: EdgeStyle,
    paramCount = 0,
  ) {
    super(req, style.frontSecret, paramCount);
    this.answer = new ResponseWriter(res, this.requestId, this.isHead, () => this.body.clientGone());
    this.body = new BodyReader(
      res,
      this,
      style.drainLimit ?? DEFAULT_DRAIN_LIMIT,
      () => this.answer.phase === 'aborted',
    );
  }

  /** Set once the client went away; nothing more may be written. */
  get aborted(): boolean {
    return this.answer.phase === 'aborted';
  }

  /** Set once the response has ended. */
  get ended(): boolean {
    return this.answer.phase === 'ended' || this.answer.phase === 'lingering';
  }

  get closed(): boolean {
    return this.answer.closed;
  }

  /** Status sent (or about to be), for logs and metrics. */
  get status(): number {
    return this.answer.status;
  }

  /** Whether status and headers went out (a streamed response is committed after its first write). */
  get isCommitted(): boolean {
    return this.answer.phase !== 'open';
  }

  /** Where the request body stands (see BodyState). */
  get bodyState(): BodyState {
    return this.body.state;
  }

  /**
   * Every request header (repeats kept), the query string and the peer address, as the app proxy forwards
   * them. Call it synchronously in the handler (the peer address needs the live response).
   */
  requestHead(): { headers: Array<[string, string]>; query: string; remoteAddress: string } {
    return { headers: this.headerList.map(([k, v]) => [k, v]), query: this.query, remoteAddress: this.remoteAddress() };
  }

  /**
   * The peer's IP address as text: the socket's, or behind the managed front the address the front saw. Call it
   * synchronously in the handler (before the response can end).
   */
  remoteAddress(): string {
    return this.frontPeer ?? this.answer.socketAddress();
  }

  /** Adds headers to the answer this exchange will send, whichever it is (success, error or stream). */
  addHeaders(headers: HeaderList): void {
    this.answer.addHeaders(headers);
  }

  /**
   * Attaches uWS's onAborted. The router calls it when a handler returns (still inside the uWS callback,
   * so before any await can resume) without having ended the response; a response answered synchronously,
   * the hot path of GET routes, never pays for it. Idempotent.
   */
  armAbort(): void {
    this.answer.armAbort();
  }

  /** Runs `h` when the client disconnects before the response ended (never after a normal end). */
  onAbort(h: () => void): void {
    this.answer.onAbort(h);
  }

  /** Fires when the client disconnects before the response ended. */
  get signal(): AbortSignal {
    return this.answer.signal;
  }

  /** Settles once, when the response ended or the client went away. */
  get done(): Promise<void> {
    return this.answer.done;
  }

  /** Ask for `connection: close` on the answer (e.g. the server is draining). */
  closeConnectionAfterResponse(): void {
    this.answer.closeAfter = true;
  }

  /**
   * Starts reading the whole body, refusing more than `limit` bytes (413) both from Content-Length and as it
   * arrives (BodyReader.read). Must be called synchronously in the uWS handler (uWS drops body data that has no
   * listener); the router does it for routes that declare a body.
   */
  readBody(limit: number): Promise<Buffer> {
    return this.body.read(limit);
  }

  /** The body of a route declared `body: {kind: 'raw'}`. */
  bytes(): Promise<Buffer> {
    return this.body.bytes();
  }

  /** The parsed body of a route declared `body: {kind: 'json'}`; undefined for an empty body. 400 on bad JSON. */
  json(): Promise<unknown> {
    return this.body.json();
  }

  /**
   * Streams the body chunk by chunk (each chunk copied; `isLast` ends it) instead of reading it whole: for a
   * route declared `body: {kind: 'handler'}`, called synchronously in the handler. The chunks arrive as they
   * come (a proxy forwards them at once); the limit and any deferral are the caller's. Pair with
   * `pauseBody` / `resumeBody` for backpressure.
   */
  streamBody(onChunk: (chunk: Buffer, isLast: boolean) => void): void {
    this.body.stream(onChunk);
  }

  /**
   * Reads and discards a body that no route reads (the router calls it synchronously, for a route without a body
   * or a refused request), so that the answer waits for it (see send). No-op when a reader is attached.
   */
  drainBody(): void {
    this.body.drain();
  }

  /**
   * Holds the request body while the handler awaits something before it decides to read it (credentials that may be
   * on their way from another replica: fresh-credentials.ts). Call synchronously in the handler (uWS drops body data
   * that has no listener). The socket is paused at once; what uWS had already read (at most its receive buffer) is
   * kept and handed, in order, to the reader attached next (readBody, streamBody), which resumes the socket. An
   * answer sent while the body is held reads and drops it like any unread body (see send). No-op without a body.
   */
  holdBody(): void {
    this.body.hold();
  }

  /** Stops reading the socket (backpressure on an upload). Pair with `resumeBody`, also after the response ended: a paused keep-alive socket reads no next request. */
  pauseBody(): void {
    this.answer.pause();
  }

  resumeBody(): void {
    this.answer.resume();
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
    if (this.answer.phase !== 'open') return;
    this.body.dropHeld(); // a held body nobody will read: dropped, the answer waits for it as for any other
    // Without the front only: through HAProxy 2.6 an answer complete under an upload still on its way is lost to a
    // reset (18 of 20 whole 1.5 MB chat bodies lost their 413 that way; HAProxy drains the rest of a request after an
    // early answer only from 3.0); there the 413 waits for the body like other answers, or for the body to stall.
    // uWS 20.57 never closes such a connection by itself (uws.ts): there the 413 lingers (answerThenLinger).
    if (status === 413 && this.body.arrivingUnstreamed && this.style.frontSecret === undefined) {
      if (uwsClosesAnsweredIdle || this.isHead) return this.answerBeforeBody(status, body, headers);
      return this.answerThenLinger(status, body, headers);
    }
    if (status === 413 && !this.isHead && this.body.answerWaits) return this.answerAheadOfBody(status, body, headers);
    if (this.body.answerWaits) {
      this.answer.reserve(status);
      this.body.deferAnswer((stalled) => {
        this.answer.release();
        if (stalled) this.answerBeforeBody(status, body, headers);
        else this.send(status, body, headers, closeConnection);
      });
      return;
    }
    this.answer.end(status, body, headers, closeConnection || this.answer.closeAfter || this.body.arriving);
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
    this.answer.openChunked(status, body, headers);
    this.body.deferAnswer(() => this.answer.endChunked());
  }

  /**
   * uWS 20.57 without the front: a 413 decided before its body arrived goes out whole at once, then the rest of the
   * body is read and dropped and the connection closed once it arrived, once it stalls (BODY_STALL_MS without a
   * byte), or after LINGER_MS at most: a lingering close (ResponseWriter.endAndLinger). The close never comes while
   * the client is still sending, short of the bound, so no reset destroys the answer it has not read yet; a client
   * that stalls or trickles is closed all the same.
   */
  private answerThenLinger(status: number, body: string | Uint8Array, headers: HeaderList): void {
    this.answer.endAndLinger(status, body, headers, LINGER_MS);
    this.body.deferAnswer(() => this.answer.closeLingering(), Number.POSITIVE_INFINITY);
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
    this.answer.endOpen(status, body, headers);
  }

  sendJson(status: number, value: unknown, extraHeaders: HeaderList = []): void {
    this.sendJsonText(status, JSON.stringify(value), extraHeaders);
  }

  /** `json` is already serialized. */
  sendJsonText(status: number, json: string, extraHeaders: HeaderList = []): void {
    this.send(
      status,
      json,
      extraHeaders.length === 0 ? this.style.jsonHeaders : [...this.style.jsonHeaders, ...extraHeaders],
    );
  }

  /** The edge's error body (EdgeStyle), with Retry-After, WWW-Authenticate, Allow and the edge's own error headers where they apply. */
  sendError(err: ApiError): void {
    if (this.answer.phase !== 'open') return;
    this.errorCode = err.code ?? err.type;
    const headers: Array<readonly [string, string]> = [];
    if (err.retryAfter !== undefined) headers.push(['retry-after', String(err.retryAfter)]);
    if (err.status === 401) headers.push(['www-authenticate', 'Bearer']);
    if (err.status === 405 && Array.isArray(err.details?.allowed))
      headers.push(['allow', (err.details.allowed as string[]).join(', ')]);
    if (this.style.errorHeaders) headers.push(...this.style.errorHeaders(err, this));
    // A 413 is sent before the body was read; close so the client stops uploading.
    this.send(
      err.status,
      JSON.stringify(this.style.errorBody(err)),
      [...this.style.jsonHeaders, ...headers],
      err.status === 413,
    );
  }

  /**
   * Streaming: writes status + headers (first call) and a chunk. Returns false when uWS built up
   * backpressure: the caller must stop and `await waitWritable()`. The chunk itself is always buffered.
   */
  writeChunk(chunk: string | Uint8Array, status = 200, headers: HeaderList = []): boolean {
    return this.answer.writeChunk(chunk, status, headers);
  }

  /** Resolves when uWS drained its buffer for this response, or when the client went away. */
  waitWritable(): Promise<void> {
    return this.answer.waitWritable();
  }

  /** Ends a streamed response (optionally with a last chunk). Idempotent. */
  endStream(last: string | Uint8Array = '', headers: HeaderList = []): void {
    this.answer.endStream(last, headers);
  }

  /** Drops the connection (e.g. a slow stream over its buffer limit). Triggers the abort handlers. */
  close(): void {
    this.answer.close();
  }
}
