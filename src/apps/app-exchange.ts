import type { PresentedCredentials } from '../accounts/authenticator.ts';
import type { ApiError } from '../errors/index.ts';
import type { HeaderList, HttpExchange } from '../http/http-exchange.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { presentedCredentials } from '../accounts/authenticated-route.ts';
import type { SessionHttpOptions } from '../accounts/session-cookie.ts';
import { SseWriter } from '../http/sse-writer.ts';

/**
 * The one place where the app routes (app-routes.ts, app-proxy-routes.ts) meet the HTTP edge: everything
 * they need of an exchange, as a small interface over HttpExchange. Created synchronously in the handler
 * (it reads the request head at once, before any await). Main thread; owned by one request.
 */
export class AppExchange {
  readonly headers: ReadonlyArray<[string, string]>;
  readonly query: URLSearchParams;
  readonly rawQuery: string;
  readonly remoteAddress: string;

  constructor(private readonly ex: HttpExchange) {
    const head = ex.requestHead();
    this.headers = head.headers;
    this.rawQuery = head.query;
    this.query = new URLSearchParams(head.query);
    this.remoteAddress = head.remoteAddress;
  }

  get method(): string {
    return this.ex.method;
  }

  /** The raw path (still percent-encoded), without the query. */
  get path(): string {
    return this.ex.url;
  }

  /** Decoded path parameters. */
  get params(): readonly string[] {
    return this.ex.params;
  }

  get authorization(): string {
    return this.ex.authorization;
  }

  /** The API key or session cookie the request presents (management auth); call synchronously. */
  credentials(session: SessionHttpOptions): PresentedCredentials {
    return presentedCredentials(this.ex, session);
  }

  header(name: string): string | undefined {
    return this.headers.find(([k]) => k === name)?.[1];
  }

  get contentLength(): number | undefined {
    return this.ex.contentLength;
  }

  get closed(): boolean {
    return this.ex.closed;
  }

  get committed(): boolean {
    return this.ex.isCommitted;
  }

  /** Whole body, capped (413); call synchronously. */
  readBody(limit: number): Promise<Buffer> {
    return this.ex.readBody(limit);
  }

  /** Whole body parsed as JSON (depth-bounded, 400 on bad JSON), capped (413); call synchronously. */
  readJson(limit: number): Promise<unknown> {
    return this.ex.readBody(limit).then((bytes) => parseJsonBody(bytes));
  }

  /** Streams the body; call synchronously. */
  streamBody(onChunk: (chunk: Buffer, isLast: boolean) => void): void {
    this.ex.streamBody(onChunk);
  }

  private paused = false;

  pauseBody(): void {
    this.paused = true;
    this.ex.pauseBody();
  }

  resumeBody(): void {
    if (!this.paused) return;
    this.paused = false;
    this.ex.resumeBody();
  }

  onAbort(h: () => void): void {
    this.ex.onAbort(h);
  }

  sendJson(status: number, value: unknown, headers: HeaderList = []): void {
    this.ex.sendJson(status, value, headers);
  }

  sendError(err: ApiError): void {
    this.resumeBody();
    this.ex.sendError(err);
  }

  /** A complete answer without streaming (204, 304, HEAD). */
  send(status: number, body: string, headers: HeaderList): void {
    this.resumeBody(); // the socket must read the next request of a keep-alive connection
    this.ex.send(status, body, headers);
  }

  /** Writes status + headers on the first call, then the chunk; false = wait for `waitWritable`. */
  write(chunk: Uint8Array | string, status: number, headers: HeaderList): boolean {
    return this.ex.writeChunk(chunk, status, headers);
  }

  waitWritable(): Promise<void> {
    return this.ex.waitWritable();
  }

  /** Ends a response started with `write`. */
  end(): void {
    this.resumeBody();
    this.ex.endStream();
  }

  /** Drops the connection (a failure after the response started). */
  close(): void {
    this.ex.close();
  }

  sse(onOverflow: () => void, keepAliveMs: number): SseWriter {
    return new SseWriter(this.ex, onOverflow, { keepAliveMs });
  }
}
