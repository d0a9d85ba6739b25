import type { HttpResponse } from 'uWebSockets.js';
import { payloadTooLarge } from '../errors/index.ts';
import { parseJsonBody } from './json-body.ts';
import type { RequestHead } from './request-head.ts';

/**
 * How long an answer waits for a body that stopped arriving (no byte for this long) before it goes out anyway
 * (HttpExchange.send): a client uploading at any usable pace sends more often; one that declared a length and
 * stalled gets its answer instead of waiting for the front's or uWS's time-out.
 */
export const BODY_STALL_MS = 500;

/** Thrown into a pending body read when the client went away. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
}

/** An answer that waits for the body: `stalled` says the body stopped coming, else it arrived (or passed the bound). */
export type WaitingAnswer = (stalled: boolean) => void;

interface HeldChunk {
  chunk: Buffer;
  isLast: boolean;
}

/**
 * Where a request body stands. One field, one value at a time:
 * - `none`: no reader attached (no body, or none read yet: uWS drops what arrives without a listener).
 * - `held`: paused by `hold` until a reader is attached; `chunks` is what uWS had already delivered.
 * - `streamed`: a handler reads it chunk by chunk (its limit and its answer's timing are its own), still arriving.
 * - `reading`: the exchange collects it (`read`), still arriving; `bytes` counted so far.
 * - `drained`: read and dropped (nobody takes it, or its answer went out), still arriving.
 * - `deferred`: still arriving, and an answer waits for its end, or for it to stall (BODY_STALL_MS: `timer`).
 * - `stalled`: it stopped coming while an answer waited; the answer went out, the rest is read and dropped.
 * - `read`: its last byte arrived.
 */
export type BodyState =
  | { readonly kind: 'none' }
  | { readonly kind: 'held'; readonly chunks: HeldChunk[] }
  | { readonly kind: 'streamed' }
  | { readonly kind: 'reading' | 'drained'; bytes: number }
  | {
      readonly kind: 'deferred';
      bytes: number;
      readonly limit: number;
      readonly answer: WaitingAnswer;
      readonly timer: NodeJS.Timeout;
    }
  | { readonly kind: 'stalled' }
  | { readonly kind: 'read' };

const NONE: BodyState = { kind: 'none' };
const READ: BodyState = { kind: 'read' };
const STALLED: BodyState = { kind: 'stalled' };

/**
 * The one reader of a request's body on a uWS response (part of HttpExchange). Readers attach synchronously in the
 * uWS handler (uWS drops body data that has no listener). Chunks from uWS are views of its buffer, valid only
 * during the call: whatever is kept is copied. `gone` tells whether the client left (the exchange's onAborted
 * calls `clientGone`). Thread: the main event loop only.
 */
export class BodyReader {
  private current: BodyState = NONE;
  private body: Promise<Buffer> | null = null;
  private parsed: Promise<unknown> | null = null;
  private onGone: (() => void) | null = null;

  constructor(
    private readonly res: HttpResponse,
    private readonly head: RequestHead,
    /** Largest body an answer waits for (EdgeStyle.drainLimit). */
    private readonly drainLimit: number,
    private readonly gone: () => boolean,
  ) {}

  get state(): BodyState {
    return this.current;
  }

  /** Whether the body is still on its way (a reader attached, its last byte not yet here). */
  get arriving(): boolean {
    const k = this.current.kind;
    return k !== 'none' && k !== 'held' && k !== 'read';
  }

  /** Whether the exchange itself reads the body (collected or dropped) and it is still on its way. */
  get arrivingUnstreamed(): boolean {
    return this.current.kind === 'reading' || this.current.kind === 'drained';
  }

  /**
   * Whether an answer must wait for the rest of the body: the exchange reads it (a handler's own stream is its
   * business), it is still arriving, and it fits the drain bound (declared and as counted).
   */
  get answerWaits(): boolean {
    const s = this.current;
    if (s.kind !== 'reading' && s.kind !== 'drained') return false;
    const declared = this.head.contentLength;
    return (declared === undefined || declared <= this.drainLimit) && s.bytes <= this.drainLimit;
  }

  /**
   * Reads the whole body, refusing more than `limit` bytes (413) both from Content-Length and as it arrives. It
   * resolves one event-loop turn after its last byte, and only if the client is still there: uWS refuses a request
   * pipelined behind one still being answered by closing the connection in the same turn, and a request whose
   * connection is gone must not run (nobody would learn its outcome; a retrying client would duplicate it).
   */
  read(limit: number): Promise<Buffer> {
    if (this.body !== null) return this.body;
    if (this.current.kind !== 'none' && this.current.kind !== 'held') throw new Error('body already streamed');
    this.body = new Promise<Buffer>((resolve, reject) => {
      const declared = this.head.contentLength;
      if (declared !== undefined && declared > limit) {
        reject(payloadTooLarge(limit));
        this.discard(); // the 413 waits for it within the drain bound, then closes the connection
        return;
      }
      const parts: Buffer[] = [];
      let size = 0;
      let failed = false;
      const left = () => reject(new ClientGoneError('client disconnected while sending the body'));
      this.onGone = left;
      this.attach({ kind: 'reading', bytes: 0 }, (chunk, isLast) => {
        this.progress(chunk.byteLength, isLast);
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
        setImmediate(() => (this.gone() ? reject(new ClientGoneError('client disconnected')) : resolve(whole)));
      });
      if (this.gone()) left(); // it left while the body was held
    });
    this.body.catch(() => {}); // observed by whoever awaits it; this only prevents an early 'unhandled' report
    return this.body;
  }

  /** The body `read` collects (a route declared `body: {kind: 'raw'}`). */
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

  /** Hands each chunk (copied; `isLast` ends it) to a handler that reads the body itself. */
  stream(onChunk: (chunk: Buffer, isLast: boolean) => void): void {
    if (this.current.kind !== 'none' && this.current.kind !== 'held') throw new Error('body already read');
    this.attach({ kind: 'streamed' }, (chunk, isLast) => {
      if (isLast) this.current = READ;
      onChunk(Buffer.from(chunk), isLast); // a copy (see attach)
    });
  }

  /**
   * Reads and drops a body nobody reads, so that an answer can wait for it. No-op once a reader is attached, and for a
   * held body (its reader comes later).
   */
  drain(): void {
    if (this.current.kind === 'none' && this.head.hasBody) this.discard();
  }

  /** Reads and drops a held body: the answer went out before anyone read it. */
  dropHeld(): void {
    if (this.current.kind === 'held') this.discard();
  }

  /**
   * Pauses the socket and keeps what uWS had already read (at most its receive buffer) for the reader attached next,
   * which resumes it. No-op without a body.
   */
  hold(): void {
    if (this.current.kind !== 'none' || !this.head.hasBody) return;
    const chunks: HeldChunk[] = [];
    this.current = { kind: 'held', chunks };
    this.res.onData((chunk, isLast) => chunks.push({ chunk: Buffer.from(chunk.slice(0)), isLast }));
    this.res.pause();
  }

  /**
   * Makes `answer` wait for the rest of the body (only while it arrives unstreamed): it runs once the body arrived or
   * passed `limit` bytes (`stalled` false; default the drain bound), or after BODY_STALL_MS without a byte (`stalled` true).
   */
  deferAnswer(answer: WaitingAnswer, limit = this.drainLimit): void {
    const s = this.current;
    if (s.kind !== 'reading' && s.kind !== 'drained')
      throw new Error(`no answer can wait for a body that is ${s.kind}`);
    const timer = setTimeout(() => {
      this.current = STALLED;
      answer(true);
    }, BODY_STALL_MS);
    this.current = { kind: 'deferred', bytes: s.bytes, limit, answer, timer };
  }

  /** The client left: a pending read rejects, an answer waiting for the body is dropped. */
  clientGone(): void {
    const s = this.current;
    if (s.kind === 'deferred') {
      clearTimeout(s.timer);
      this.current = { kind: 'drained', bytes: s.bytes };
    }
    const onGone = this.onGone;
    this.onGone = null;
    onGone?.();
  }

  private discard(): void {
    this.attach({ kind: 'drained', bytes: 0 }, (chunk, isLast) => this.progress(chunk.byteLength, isLast));
  }

  /** Counts body bytes; at the body's end, or once past the drain bound, sends an answer that was waiting. */
  private progress(bytes: number, isLast: boolean): void {
    const s = this.current;
    switch (s.kind) {
      case 'reading':
      case 'drained':
        s.bytes += bytes;
        if (isLast) this.current = READ;
        return;
      case 'deferred':
        s.bytes += bytes;
        if (!isLast && s.bytes <= s.limit) {
          s.timer.refresh();
          return;
        }
        clearTimeout(s.timer);
        this.current = isLast ? READ : { kind: 'drained', bytes: s.bytes };
        s.answer(false);
        return;
      case 'stalled':
        if (isLast) this.current = READ;
        return;
      default:
        return;
    }
  }

  /**
   * Sets the reader's state and attaches its handler: first what `hold` kept (then the socket reads again), then
   * uWS's chunks as they come. A chunk is only valid during the call (a view of uWS's buffer).
   */
  private attach(state: BodyState, handler: (chunk: Buffer, isLast: boolean) => void): void {
    const before = this.current;
    this.current = state;
    const live = (chunk: ArrayBuffer, isLast: boolean) => handler(Buffer.from(chunk), isLast);
    if (before.kind !== 'held') {
      this.res.onData(live);
      return;
    }
    if (this.gone()) return; // the client left while the body was held: the reader's abort handler answers
    let ended = false;
    for (const { chunk, isLast } of before.chunks) {
      handler(chunk, isLast);
      ended ||= isLast;
    }
    if (this.gone()) return;
    if (!ended) this.res.onData(live);
    this.res.resume(); // also once the body ended: a paused keep-alive socket reads no next request
  }
}
