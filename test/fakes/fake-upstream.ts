import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { FakeReply, NormalizedRequest, ResolvedReply, VendorDialect, VendorResponse } from './dialect.ts';

/**
 * A local stand-in for one vendor's API (node:http on 127.0.0.1, port 0), speaking that vendor's wire
 * format through a VendorDialect. Scriptable per test and recording everything it receives. Lives in
 * the test process; close() (idempotent) drops every connection. Not thread-safe; one per test file
 * (or per describe block), reset() between tests.
 */

export type FakeBehaviour =
  | { kind: 'reply'; reply?: Partial<FakeReply> }
  /** The vendor's error response for `status`; `retryAfter` is a Retry-After header value (Gemini puts it in RetryInfo instead). */
  | { kind: 'fail'; status: number; retryAfter?: string; retryAfterMs?: string; message?: string }
  /** Read the request, never answer. */
  | { kind: 'stall' }
  /** Send the stream's headers and first `afterPieces` pieces, then fall silent (connection kept open). */
  | { kind: 'stall-mid-stream'; afterPieces: number }
  /** Send the first `afterPieces` pieces, then destroy the socket. */
  | { kind: 'drop-mid-stream'; afterPieces: number }
  /** Send the first `afterPieces` pieces, then the vendor's in-stream error event and end. */
  | { kind: 'stream-error'; afterPieces: number; message?: string }
  /** A normal answer (JSON or stream), written one byte every `intervalMs`: never silent long, never done soon. */
  | { kind: 'trickle'; intervalMs: number }
  /** Stream headers and the first `afterPieces` pieces, then an SSE comment every `intervalMs`, forever. */
  | { kind: 'comments-forever'; afterPieces: number; intervalMs: number }
  /** Answer `status` (301/302/303/307/308) with `Location: location`. */
  | { kind: 'redirect'; status: number; location: string };

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, or the raw text when the body is not JSON. */
  body: unknown;
  /** performance.now() when the request's body had been read. */
  receivedAt: number;
  /** What the fake did: a behaviour kind, 'unauthorized', 'rejected' (dialect validation) or 'not-found'. */
  outcome: FakeBehaviour['kind'] | 'unauthorized' | 'rejected' | 'not-found';
  /** The client closed the connection before the response was complete. */
  aborted: boolean;
  /** The response was written completely. */
  completed: boolean;
}

/** Splits `text` into `n` nearly equal non-empty parts (fewer when it is short). */
export function splitInto(text: string, n = 3): string[] {
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export interface FakeUpstreamOptions {
  /** The key the fake accepts; any other (or none) gets the vendor's auth error. Undefined accepts any key. */
  apiKey?: string | undefined;
  /** The default reply. */
  reply?: Partial<FakeReply> | undefined;
}

const DEFAULT_TEXT = 'Hello from the fake upstream.';

export class FakeUpstream {
  readonly requests: RecordedRequest[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private queue: FakeBehaviour[] = [];
  private defaultReply: Partial<FakeReply>;
  private abortWaiters: Array<() => void> = [];
  private closing = false;
  private closed: Promise<void> | undefined;
  private port = 0;

  private constructor(
    readonly dialect: VendorDialect,
    private apiKey: string | undefined,
    reply: Partial<FakeReply> | undefined,
  ) {
    this.defaultReply = reply ?? {};
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        // A bug in a dialect must fail the test visibly, not crash the runner with an unhandled rejection.
        if (!res.headersSent) this.send(res, { status: 500, body: { error: `fake upstream crashed: ${String(err)}` } });
        else res.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(dialect: VendorDialect, options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
    const fake = new FakeUpstream(dialect, options.apiKey, options.reply);
    await new Promise<void>((resolve, reject) => {
      fake.server.once('error', reject);
      fake.server.listen(0, '127.0.0.1', () => resolve());
    });
    fake.port = (fake.server.address() as AddressInfo).port;
    return fake;
  }

  /** The base URL to give the provider (includes the vendor's path prefix). */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}${this.dialect.basePath}`;
  }

  /** Behaviours for the next requests, one each, in order; after them the default reply. */
  script(...behaviours: FakeBehaviour[]): this {
    this.queue.push(...behaviours);
    return this;
  }

  setReply(reply: Partial<FakeReply>): this {
    this.defaultReply = reply;
    return this;
  }

  setApiKey(key: string | undefined): this {
    this.apiKey = key;
    return this;
  }

  /** Forgets recorded requests and scripted behaviours (between tests). */
  reset(options: FakeUpstreamOptions = {}): this {
    this.requests.length = 0;
    this.queue = [];
    this.defaultReply = options.reply ?? {};
    if ('apiKey' in options) this.apiKey = options.apiKey;
    return this;
  }

  /** The last request, normalized. */
  lastRequest(): NormalizedRequest {
    const last = this.requests[this.requests.length - 1];
    if (last === undefined) throw new Error('the fake received no request');
    return this.dialect.describe(
      last.body,
      new URL(`http://x${last.path}?${new URLSearchParams(last.query).toString()}`),
    );
  }

  /** Resolves once some recorded request was aborted by the client (rejects after `timeoutMs`). */
  waitForAbort(timeoutMs = 2000): Promise<RecordedRequest> {
    const found = () => this.requests.find((r) => r.aborted);
    const now = found();
    if (now) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no client abort seen within ${timeoutMs} ms`)), timeoutMs);
      this.abortWaiters.push(() => {
        const hit = found();
        if (hit) {
          clearTimeout(timer);
          resolve(hit);
        }
      });
    });
  }

  /** Stops listening and destroys every connection. Idempotent. */
  close(): Promise<void> {
    if (this.closed) return this.closed;
    this.closing = true;
    this.closed = new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
    return this.closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown = raw;
    try {
      body = JSON.parse(raw);
    } catch {
      /* keep the raw text */
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
      receivedAt: performance.now(),
      outcome: 'reply',
      aborted: false,
      completed: false,
    };
    this.requests.push(record);
    res.on('close', () => {
      record.completed = res.writableFinished;
      if (!res.writableFinished && !this.closing) {
        record.aborted = true;
        for (const wake of this.abortWaiters) wake();
      }
    });

    const route = this.dialect.route(record.method, url, body);
    if (route === null) {
      record.outcome = 'not-found';
      return this.send(res, { status: 404, body: { error: { message: `no route ${record.method} ${url.pathname}` } } });
    }
    if (this.apiKey !== undefined && this.dialect.apiKeyOf(req.headers, url) !== this.apiKey) {
      record.outcome = 'unauthorized';
      return this.send(res, this.dialect.unauthorized(this.dialect.apiKeyOf(req.headers, url)));
    }
    const invalid = this.dialect.validate(req.headers, body, url);
    if (invalid !== null) {
      record.outcome = 'rejected';
      return this.send(res, invalid);
    }

    const behaviour = this.queue.shift() ?? { kind: 'reply' };
    record.outcome = behaviour.kind;
    if (behaviour.kind === 'stall') return; // never answer; the client's abort or close() ends it
    if (behaviour.kind === 'redirect') {
      res.writeHead(behaviour.status, { location: behaviour.location, 'content-length': '0' });
      return void res.end();
    }
    if (behaviour.kind === 'fail') {
      const response = this.dialect.error(behaviour.status, behaviour.message, behaviour.retryAfter);
      if (behaviour.retryAfterMs !== undefined)
        response.headers = { ...response.headers, 'retry-after-ms': behaviour.retryAfterMs };
      return this.send(res, response);
    }
    const reply = this.resolveReply(
      behaviour.kind === 'reply' ? behaviour.reply : undefined,
      this.dialect.describe(body, url),
    );
    if (behaviour.kind === 'trickle') {
      const text = route.stream
        ? (({ head, pieces, tail }) => [...head, ...pieces, ...tail].join(''))(
            this.dialect.stream(reply, route.model, body),
          )
        : JSON.stringify(this.dialect.json(reply, route.model));
      res.writeHead(
        200,
        route.stream ? this.dialect.streamHeaders : { 'content-type': 'application/json; charset=utf-8' },
      );
      return this.every(res, behaviour.intervalMs, (i) => {
        if (i >= text.length) return false;
        res.write(text[i]);
        return true;
      });
    }
    if (!route.stream) {
      if (behaviour.kind !== 'reply')
        return this.send(res, {
          status: 500,
          body: { error: `fake misuse: '${behaviour.kind}' needs a streaming request` },
        });
      return this.send(res, { status: 200, body: this.dialect.json(reply, route.model) });
    }
    const rendered = this.dialect.stream(reply, route.model, body);
    res.writeHead(200, this.dialect.streamHeaders);
    for (const event of rendered.head) res.write(event);
    const limit =
      behaviour.kind === 'reply' ? rendered.pieces.length : Math.min(behaviour.afterPieces, rendered.pieces.length);
    for (const event of rendered.pieces.slice(0, limit)) res.write(event);
    switch (behaviour.kind) {
      case 'reply':
        for (const event of rendered.tail) res.write(event);
        res.end();
        return;
      case 'stall-mid-stream':
        return; // silence; headers and pieces are flushed, the connection stays open
      case 'drop-mid-stream':
        setTimeout(() => res.socket?.destroy(), 10);
        return;
      case 'stream-error':
        res.end(this.dialect.streamError(behaviour.message ?? 'Overloaded'));
        return;
      case 'comments-forever':
        return this.every(res, behaviour.intervalMs, () => {
          res.write(': keep-alive\n\n');
          return true;
        });
    }
  }

  /** Calls `tick(i)` every `intervalMs` until it returns false (then ends the response) or the connection closes. */
  private every(res: ServerResponse, intervalMs: number, tick: (i: number) => boolean): void {
    let i = 0;
    const timer = setInterval(() => {
      if (res.destroyed || this.closing) return clearInterval(timer);
      if (!tick(i++)) {
        clearInterval(timer);
        res.end();
      }
    }, intervalMs);
    res.on('close', () => clearInterval(timer));
  }

  private resolveReply(override: Partial<FakeReply> | undefined, request: NormalizedRequest): ResolvedReply {
    const merged = { ...this.defaultReply, ...override };
    const toolCalls = (merged.toolCalls ?? []).map((c) => ({
      ...c,
      pieces: c.pieces ?? splitInto(JSON.stringify(c.arguments)),
    }));
    const text = merged.text ?? (toolCalls.length > 0 ? '' : DEFAULT_TEXT);
    const pieces = merged.pieces ?? text.match(/\S+\s*|\s+/g) ?? [];
    const promptWords = [request.system ?? '', ...request.messages.map((m) => m.content)]
      .join(' ')
      .split(/\s+/)
      .filter(Boolean).length;
    return {
      text,
      pieces,
      toolCalls,
      finishReason:
        merged.finishReason ?? (toolCalls.length > 0 ? this.dialect.toolStopReason : this.dialect.stopReason),
      usage: merged.usage ?? { prompt: promptWords, completion: pieces.length + toolCalls.length },
    };
  }

  private send(res: ServerResponse, response: VendorResponse): void {
    const payload = typeof response.body === 'string' ? response.body : JSON.stringify(response.body);
    res.writeHead(response.status, { 'content-type': 'application/json; charset=utf-8', ...response.headers });
    res.end(payload);
  }
}
