/**
 * One uWS request/response pair, owned by exactly one wrapper (architecture.md habit 3).
 *
 * Contract: construct it synchronously inside the uWS route handler, before any await. The constructor
 * reads every header (the HttpRequest dies when the handler returns) and attaches `onAborted`. After that,
 * nobody touches the raw HttpResponse: writes go through `send*`, which cork, and become no-ops once the
 * response is aborted or ended. `done` settles exactly once, on end or abort; `signal` fires on abort only.
 * Main thread only.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { ApiError } from '../errors/index.ts';
import { payloadTooLarge } from '../errors/index.ts';
import { toToolErrorBody } from './tool-errors.ts';

export type HeaderList = ReadonlyArray<readonly [string, string]>;

/** Everything read from the HttpRequest while it was alive. Header names are lower-case. */
export interface RequestHead {
  method: string;
  path: string;
  query: string;
  headers: ReadonlyMap<string, string>;
}

export function readRequestHead(req: HttpRequest): RequestHead {
  const headers = new Map<string, string>();
  // uWS hands repeated headers one by one; join them like Node does.
  req.forEach((key, value) => headers.set(key, headers.has(key) ? `${headers.get(key)}, ${value}` : value));
  return { method: req.getCaseSensitiveMethod().toUpperCase(), path: req.getUrl(), query: req.getQuery() ?? '', headers };
}

const JSON_HEADERS: HeaderList = [
  ['content-type', 'application/json; charset=utf-8'],
  ['cache-control', 'no-store'],
];

/** Headers the wrapper owns (uWS writes content-length/transfer-encoding itself). */
const HOP_BY_HOP = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

export class BodyAbortedError extends Error {
  override name = 'BodyAbortedError';
}

export class UwsExchange {
  readonly head: RequestHead;
  readonly done: Promise<void>;
  #res: HttpResponse;
  #aborted = false;
  #ended = false;
  #bodyPending: boolean;
  #closeAfterResponse = false;
  #controller = new AbortController();
  #settle!: () => void;

  constructor(res: HttpResponse, req: HttpRequest) {
    this.#res = res;
    this.head = readRequestHead(req);
    const length = this.head.headers.get('content-length');
    this.#bodyPending = this.head.headers.has('transfer-encoding') || (length !== undefined && length !== '0');
    this.done = new Promise<void>((resolve) => (this.#settle = resolve));
    res.onAborted(() => {
      this.#aborted = true;
      this.#controller.abort(new Error('client disconnected'));
      this.#settle();
    });
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  /** True once a response was sent or the client went away: nothing more can be written. */
  get finished(): boolean {
    return this.#aborted || this.#ended;
  }

  /** Fires when the client disconnects before the response ended. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Ask for `connection: close` on the response (server shutting down). */
  closeConnectionAfterResponse(): void {
    this.#closeAfterResponse = true;
  }

  /**
   * Reads the whole body, at most `limitBytes`. Must be called synchronously in the route handler
   * (uWS drops data that arrives before onData is attached). Rejects with a 413 ApiError past the limit
   * (declared or observed) and with BodyAbortedError when the client goes away.
   */
  readBody(limitBytes: number): Promise<Buffer> {
    const declared = Number(this.head.headers.get('content-length') ?? 'NaN');
    if (Number.isFinite(declared) && declared > limitBytes) return Promise.reject(payloadTooLarge(limitBytes));
    if (!this.#bodyPending) return Promise.resolve(Buffer.alloc(0));
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let rejected = false;
      this.#controller.signal.addEventListener('abort', () => reject(new BodyAbortedError('client disconnected while sending the body')), { once: true });
      this.#res.onData((chunk, isLast) => {
        if (rejected || this.finished) return;
        size += chunk.byteLength;
        if (size > limitBytes) {
          rejected = true;
          reject(payloadTooLarge(limitBytes));
          return;
        }
        chunks.push(Buffer.from(chunk.slice(0))); // the ArrayBuffer is neutered when this callback returns
        if (isLast) {
          this.#bodyPending = false;
          resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
        }
      });
    });
  }

  /** Ends the response. Returns false (and writes nothing) when it had already finished. */
  send(status: number, headers: HeaderList, body: string | Uint8Array): boolean {
    if (this.finished) return false;
    this.#ended = true;
    // A body we never read fully leaves the connection in an unknown state: close it after this response.
    const close = this.#bodyPending || this.#closeAfterResponse;
    this.#res.cork(() => {
      this.#res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`.trimEnd());
      for (const [name, value] of headers) if (!HOP_BY_HOP.has(name.toLowerCase())) this.#res.writeHeader(name, value);
      this.#res.end(body, close);
    });
    this.#settle();
    return true;
  }

  /** `json` is already serialized (handlers' results are stringified once, where they are checked). */
  sendJsonText(status: number, json: string, extraHeaders: HeaderList = []): boolean {
    return this.send(status, [...JSON_HEADERS, ...extraHeaders], json);
  }

  sendJson(status: number, value: unknown, extraHeaders: HeaderList = []): boolean {
    return this.sendJsonText(status, JSON.stringify(value), extraHeaders);
  }

  /** Any kit error as `{"error": "...", "code": ...}` with its status, Retry-After and Allow headers. */
  sendError(err: ApiError): boolean {
    const headers: Array<[string, string]> = [];
    if (err.retryAfter !== undefined) headers.push(['retry-after', String(err.retryAfter)]);
    if (err.status === 401) headers.push(['www-authenticate', 'Bearer']);
    const allowed = err.details?.allowed;
    if (err.status === 405 && Array.isArray(allowed)) headers.push(['allow', allowed.join(', ')]);
    return this.sendJson(err.status, toToolErrorBody(err), headers);
  }
}
