import type { HttpResponse } from 'uWebSockets.js';
import { ClientGoneError } from './body-reader.ts';
import type { HeaderList } from './request-head.ts';
import { statusLine } from './status-text.ts';

/** Headers uWS writes itself (or that belong to the connection, not the answer). */
const OWNED_BY_UWS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);
const OWNED_LENGTHS = new Set([...OWNED_BY_UWS].map((name) => name.length));

/** Whether `name` (any case) is OWNED_BY_UWS; lower-cases only names of those lengths (per answer header, hot). */
function ownedByUws(name: string): boolean {
  return OWNED_LENGTHS.has(name.length) && OWNED_BY_UWS.has(name.toLowerCase());
}

/**
 * Where the answer stands: `open` (nothing decided), `committed` (status chosen: its head went out, or it waits for
 * the request body), `lingering` (the whole answer went out as raw bytes, uWS's response is kept open to read and
 * drop the rest of the request body until `closeLingering`: see endAndLinger), `ended` (uWS has the whole answer),
 * `aborted` (the client went away first). For the exchange, `lingering` is ended.
 */
export type ResponsePhase = 'open' | 'committed' | 'lingering' | 'ended' | 'aborted';

/** The byte length of an answer body (HEAD answers carry it as a plain header). */
function byteLength(body: string | Uint8Array): string {
  return String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
}

/**
 * The one writer of a uWS response (part of HttpExchange): status, headers, body or chunks, the connection's close,
 * and the client's departure. All writes go through `cork`, so they are safe from timers, promises and MessagePort
 * callbacks, and become no-ops once the client is gone or the answer ended. A HEAD request gets status and headers
 * only. `onClientGone` runs first when uWS reports the client left (before `onAbort` handlers).
 * Thread: the main event loop only.
 */
export class ResponseWriter {
  phase: ResponsePhase = 'open';
  /** Status sent (or about to be), for logs and metrics. */
  status = 0;
  /** Set by closeConnectionAfterResponse: the answer says `connection: close`. */
  closeAfter = false;
  private abortHandlers: Array<() => void> | null = null;
  private abortArmed = false;
  private writableWaiter: (() => void) | null = null;
  /** Headers added to whatever answer is sent (e.g. a key's rate-limit headers). */
  private extraHeaders: HeaderList = [];
  private controller: AbortController | null = null;
  /** Closes a lingering answer's connection after its longest linger (endAndLinger). */
  private lingerBound: NodeJS.Timeout | null = null;
  private settled: Promise<void> | null = null;
  private settle: (() => void) | null = null;

  constructor(
    private readonly res: HttpResponse,
    private readonly requestId: string,
    private readonly isHead: boolean,
    private readonly onClientGone: () => void,
  ) {}

  get closed(): boolean {
    return this.phase === 'ended' || this.phase === 'aborted' || this.phase === 'lingering';
  }

  /** See HttpExchange.armAbort. Idempotent. */
  armAbort(): void {
    if (this.abortArmed || this.phase === 'ended') return;
    this.abortArmed = true;
    this.res.onAborted(() => {
      if (this.phase === 'lingering' || this.phase === 'ended') {
        // The client closed after a lingering answer (or closeLingering did): nothing was cut short.
        this.phase = 'ended';
        if (this.lingerBound !== null) clearTimeout(this.lingerBound);
        this.onClientGone();
        return;
      }
      this.phase = 'aborted';
      this.wakeWritable();
      this.controller?.abort(new ClientGoneError('client disconnected'));
      this.settle?.();
      this.onClientGone();
      const handlers = this.abortHandlers;
      this.abortHandlers = null;
      if (handlers) for (const h of handlers) h();
    });
  }

  onAbort(h: () => void): void {
    if (this.phase === 'aborted') h();
    else if (this.phase !== 'ended') (this.abortHandlers ??= []).push(h);
  }

  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.phase === 'aborted') this.controller.abort(new ClientGoneError('client disconnected'));
    }
    return this.controller.signal;
  }

  get done(): Promise<void> {
    if (this.settled === null) {
      this.settled = new Promise<void>((resolve) => (this.settle = resolve));
      if (this.closed) this.settle!();
    }
    return this.settled;
  }

  addHeaders(headers: HeaderList): void {
    if (headers.length > 0) this.extraHeaders = [...this.extraHeaders, ...headers];
  }

  /** The peer's address as uWS sees the socket ('' once closed). */
  socketAddress(): string {
    return this.closed ? '' : Buffer.from(this.res.getRemoteAddressAsText()).toString();
  }

  /** Chooses the status of an answer that waits (for the request body); later answers are ignored until `release`. */
  reserve(status: number): void {
    this.armAbort(); // uWS must see a pending response has an abort handler (else it terminates the process)
    this.phase = 'committed';
    this.status = status;
  }

  /** Lets the waiting answer (`reserve`) go out. */
  release(): void {
    if (this.phase === 'committed') this.phase = 'open';
  }

  /**
   * A complete answer. HEAD: the GET answer's headers, its length, no body (a kept-alive client would read it as the
   * next answer); the legacy uWS build (v20.30) mishandles any argument to endWithoutBody (it then counts the
   * response as unanswered and aborts the process), so the length is a plain header and the connection stays open.
   * `close`: `connection: close` and uWS closes after the answer.
   */
  end(status: number, body: string | Uint8Array, headers: HeaderList, close: boolean): void {
    this.res.cork(() => {
      this.writeHead(status, headers);
      if (this.isHead) {
        this.res.writeHeader('content-length', byteLength(body));
        this.res.endWithoutBody();
      } else this.res.end(body, close);
    });
    this.finish();
  }

  /**
   * A complete answer that says `connection: close` but leaves the socket open: the rest of the request body is
   * still coming, and a close under it would reset the connection (see HttpExchange.answerBeforeBody).
   */
  endOpen(status: number, body: string | Uint8Array, headers: HeaderList): void {
    if (this.closed) return;
    this.res.cork(() => {
      this.writeHead(status, headers);
      this.res.writeHeader('connection', 'close');
      if (this.isHead) {
        this.res.writeHeader('content-length', byteLength(body));
        this.res.endWithoutBody(); // see end
      } else this.res.end(body, false);
    });
    this.finish();
  }

  /**
   * A complete answer with `connection: close`, while uWS's response stays open so that the rest of the request body
   * is read and dropped before the connection closes (`closeLingering`), as nginx's lingering close does: a close
   * while the peer still sends resets the connection, and the reset can destroy the answer before the client read it.
   * uWS 20.57 cannot do it itself: `end(body, true)` shuts down and closes at once, `end(body, false)` never closes a
   * connection whose client stalls (that build runs no time-out), and the JS response is unusable after `end`. So the
   * answer goes out as raw bytes through `writeStatus` (uWS writes a status line verbatim, then CRLF: counted in the
   * Content-Length, the JSON ends in CRLF, white space to a parser), and uWS never writes anything else for it.
   * The connection closes after `maxMs` at the latest.
   */
  endAndLinger(status: number, body: string | Uint8Array, headers: HeaderList, maxMs: number): void {
    if (this.closed) return;
    this.armAbort(); // uWS terminates the process for a pending response without one; closeLingering reports through it
    this.status = status;
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const lines = [statusLine(status), `x-request-id: ${this.requestId}`];
    for (const [k, v] of headers) if (!ownedByUws(k)) lines.push(`${k}: ${v}`);
    for (const [k, v] of this.extraHeaders) lines.push(`${k}: ${v}`);
    lines.push('connection: close', `content-length: ${bytes.byteLength + 2}`, '', '');
    const raw = Buffer.concat([Buffer.from(lines.join('\r\n')), bytes]);
    this.res.cork(() => this.res.writeStatus(raw));
    this.phase = 'lingering';
    this.lingerBound = setTimeout(() => this.closeLingering(), maxMs).unref(); // never what keeps a stopping process alive
    this.settle?.();
  }

  /**
   * Closes the connection of a lingering answer (endAndLinger) one turn later: called from uWS's data callback, the
   * socket is still corked there and a close would drop the answer uWS has not sent yet. No-op once it closed.
   */
  closeLingering(): void {
    if (this.phase !== 'lingering') return;
    if (this.lingerBound !== null) clearTimeout(this.lingerBound);
    this.lingerBound = null;
    setImmediate(() => {
      if (this.phase !== 'lingering') return; // the client closed first
      this.phase = 'ended';
      this.res.close();
    });
  }

  /** Status, headers, `connection: close` and `body` as the first chunk of a chunked answer `endChunked` completes. */
  openChunked(status: number, body: string | Uint8Array, headers: HeaderList): void {
    this.armAbort(); // see reserve
    this.res.cork(() => {
      this.writeHead(status, headers);
      this.res.writeHeader('connection', 'close');
      this.res.write(body);
    });
  }

  endChunked(): void {
    if (!this.closed) this.res.cork(() => this.res.end(undefined, false));
    this.finish();
  }

  /** See HttpExchange.writeChunk. */
  writeChunk(chunk: string | Uint8Array, status: number, headers: HeaderList): boolean {
    if (this.closed) return false;
    let ok = true;
    this.res.cork(() => {
      if (this.phase === 'open') this.writeHead(status, headers);
      if (!this.isHead) ok = this.res.write(chunk); // HEAD: headers only, the chunks are dropped
    });
    return ok;
  }

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

  endStream(last: string | Uint8Array, headers: HeaderList): void {
    if (this.closed) return;
    this.res.cork(() => {
      if (this.phase === 'open') this.writeHead(200, headers);
      if (this.isHead) this.res.endWithoutBody();
      else this.res.end(last, this.closeAfter);
    });
    this.finish();
  }

  close(): void {
    if (this.closed) return;
    this.armAbort(); // res.close() reports through onAborted
    this.res.close();
  }

  /** Pauses / resumes reading the socket (the request body's backpressure). */
  pause(): void {
    if (!this.closed) this.res.pause();
  }

  resume(): void {
    if (this.phase !== 'aborted') this.res.resume();
  }

  private writeHead(status: number, headers: HeaderList): void {
    this.status = status;
    this.phase = 'committed';
    if (status !== 200) this.res.writeStatus(statusLine(status)); // uWS writes `200 OK` itself
    this.res.writeHeader('x-request-id', this.requestId);
    for (const [k, v] of headers) if (!ownedByUws(k)) this.res.writeHeader(k, v);
    for (const [k, v] of this.extraHeaders) this.res.writeHeader(k, v);
  }

  private finish(): void {
    if (this.phase !== 'aborted') this.phase = 'ended';
    this.settle?.();
  }

  private wakeWritable(): void {
    const w = this.writableWaiter;
    this.writableWaiter = null;
    w?.();
  }
}
