import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ProviderName } from '../../src/providers/chat-provider.ts';

/**
 * A local stand-in for one vendor's API (node:http on 127.0.0.1, port 0), speaking that vendor's wire
 * format through a VendorDialect. Scriptable per test and recording everything it receives. Lives in
 * the test process; close() (idempotent) drops every connection. Not thread-safe; one per test file
 * (or per describe block), reset() between tests.
 */

/** A function call the fake's answer makes; the dialect renders it in the vendor's own shape. */
export interface FakeToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** How a stream splits the arguments' JSON text, for vendors that stream it in fragments (OpenAI, Anthropic). Defaults to 3 parts. */
  pieces?: string[] | undefined;
}

/** What a successful answer says. Vendor-neutral; the dialect renders it. */
export interface FakeReply {
  /** Defaults to a fixed sentence, or '' when the answer makes tool calls. */
  text: string;
  /** Function calls after the text (finish reason defaults to the dialect's tool finish). */
  toolCalls?: FakeToolCall[] | undefined;
  /** How a stream splits `text`. Defaults to words with their trailing spaces. */
  pieces?: string[] | undefined;
  /** The vendor's own finish reason (e.g. 'max_tokens' for Anthropic). Defaults to the dialect's "stop". */
  finishReason?: string | undefined;
  /** Defaults to prompt = words in the request's messages, completion = number of pieces. */
  usage?: { prompt: number; completion: number } | undefined;
}

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

export interface VendorResponse {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** A request in vendor-neutral terms, as read back from the vendor's wire format (for assertions). */
export interface NormalizedMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  /** assistant: the calls it made (arguments parsed; Gemini: the part's thoughtSignature). */
  toolCalls?:
    Array<{ id?: string | undefined; name: string; arguments: unknown; signature?: string | undefined }> | undefined;
  /** tool: the id of the call answered (OpenAI, Mistral, Anthropic) ... */
  toolCallId?: string | undefined;
  /** ... or the function's name (Gemini). */
  toolName?: string | undefined;
}

export interface NormalizedRequest {
  model: string;
  stream: boolean;
  system: string | undefined;
  messages: NormalizedMessage[];
  tools?: Array<{ name: string; description?: string | undefined; parameters: unknown }> | undefined;
  toolChoice?: 'auto' | 'required' | 'none' | { name: string } | undefined;
  /** false when the vendor was told to make at most one call. */
  parallelToolCalls?: boolean | undefined;
  responseFormat?: { type: 'json_object' } | { type: 'json_schema'; schema: unknown } | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  maxTokens?: number | undefined;
  stop?: string[] | undefined;
  seed?: number | undefined;
}

/** A stream rendered as SSE text: everything before the pieces, one string per piece, everything after. */
export interface RenderedStream {
  head: string[];
  pieces: string[];
  tail: string[];
}

/** Everything vendor-specific: routes, auth, error bodies, reply bodies, SSE framing. */
export interface VendorDialect {
  readonly name: ProviderName;
  /** Path prefix that a provider's baseUrl includes (OpenAI/Mistral '/v1', others ''). */
  readonly basePath: string;
  /** Whether the request targets the chat endpoint; null when it does not (-> 404). */
  route(method: string, url: URL, body: unknown): { stream: boolean; model: string } | null;
  /** The API key the client sent, if any. */
  apiKeyOf(headers: IncomingHttpHeaders, url: URL): string | undefined;
  /** The vendor's answer to a missing or wrong key. */
  unauthorized(sentKey: string | undefined): VendorResponse;
  /** The vendor's own request validation (required headers, fields, ranges); null when the request is acceptable. */
  validate(headers: IncomingHttpHeaders, body: unknown, url: URL): VendorResponse | null;
  /** The vendor's error response for `status`. */
  error(status: number, message: string | undefined, retryAfter: string | undefined): VendorResponse;
  json(reply: ResolvedReply, model: string): unknown;
  stream(reply: ResolvedReply, model: string, body: unknown): RenderedStream;
  /** The vendor's in-stream error event. */
  streamError(message: string): string;
  /** Response headers of a stream. */
  readonly streamHeaders: Record<string, string>;
  /** The stop reason the dialect uses by default. */
  readonly stopReason: string;
  /** The stop reason of an answer that makes tool calls. */
  readonly toolStopReason: string;
  describe(body: unknown, url: URL): NormalizedRequest;
}

/** A reply with every default applied. */
export type ResolvedReply = Required<Omit<FakeReply, 'pieces' | 'toolCalls'>> & {
  pieces: string[];
  toolCalls: Array<Required<FakeToolCall>>;
};

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

/** Random hex, for vendor ids in bodies. */
export function fakeId(length = 24): string {
  let out = '';
  while (out.length < length) out += Math.random().toString(16).slice(2);
  return out.slice(0, length);
}
