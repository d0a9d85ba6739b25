/**
 * `createToolServer`: the tool-server pattern of service-spec 4.5 on uWebSockets.js.
 *
 *   GET  /health             public            -> 200 {"ok": true} (503 {"ok": false} while closing)
 *   GET  /api/v1/mcp/tools   bearer            -> 200 {"tools": [{name, description, input_schema}]}
 *   POST /api/v1/mcp         bearer  {tool, args}      -> 200 <the tool's JSON result>
 *                                    JSON-RPC 2.0 body -> MCP Streamable HTTP (mcp-endpoint.ts)
 *
 * Every answer is JSON (`{"error": "...", "code": "..."}` on failure), except MCP's bodiless 202 for a
 * notification. Order of checks for a request: route (404), method (405), bearer (401), content-type (415),
 * capacity (503), body size (413), JSON (400), envelope (400), tool (404), arguments (400), handler
 * (500/504, or a ToolError's own status). Main thread only; one server owns one uWS app and listen socket.
 */
import type { TemplatedApp, us_listen_socket, us_socket } from 'uWebSockets.js';
import { uWS } from '../http/uws.ts';
import type { Ajv } from 'ajv';
import {
  type ApiError,
  malformedJson,
  toApiError,
  unauthorized,
  unsupportedMediaType,
  internalError,
} from '../errors/index.ts';
import { ClientGoneError, type EdgeStyle, type HttpExchange } from '../http/http-exchange.ts';
import { mountRoutes, type Route } from '../http/router.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { BearerAuth } from './bearer-auth.ts';
import { isJsonRpcBody, McpEndpoint } from './mcp-endpoint.ts';
import type { ToolDefinition, ToolDescription } from './tool-definition.ts';
import { invalidToolCall, serverBusy, serverClosing, toToolErrorBody } from './tool-errors.ts';
import { invokeTool } from './tool-invoker.ts';
import { ToolRegistry } from './tool-registry.ts';

export const TOOL_CALL_PATH = '/api/v1/mcp';
export const TOOL_LIST_PATH = '/api/v1/mcp/tools';
export const HEALTH_PATH = '/health';

export interface ToolServerOptions {
  /** The application's tools. A built-in `healthcheck` ({"ok": true}) is added unless one is given. */
  // `any`: each tool types its own args (ToolDefinition<{ city: string }>), and they differ from tool to tool.
  tools: ReadonlyArray<ToolDefinition<any>>;
  /**
   * The bearer key clients must send on the tool routes (`Authorization: Bearer <apiKey>`). `null` serves
   * without authentication (logged as a warning). `/health` is always public.
   */
  apiKey: string | null;
  /** Defaults to the `PORT` environment variable, else 8080. 0 picks a free port (see `listen()`'s result). */
  port?: number;
  /** Defaults to 0.0.0.0 (all IPv4 interfaces, as a deployed app needs). */
  host?: string;
  /** Largest accepted request body. Defaults to 1 MiB. */
  bodyLimitBytes?: number;
  /** Per-call time limit; past it the client gets 504 and the handler's signal aborts. Defaults to 30 s. */
  toolTimeoutMs?: number;
  /** POSTs on /api/v1/mcp running at once; past it, 503 with Retry-After. Defaults to 64. */
  maxConcurrentCalls?: number;
  /** How long close() lets running calls finish before aborting them (they answer 503). Defaults to 10 s. */
  shutdownGraceMs?: number;
  /** MCP serverInfo.name. Defaults to 'hearth-tool-server'. */
  name?: string;
  /** MCP serverInfo.version. Defaults to '0.1.0'. */
  version?: string;
  /** Defaults to a JSON-lines logger on stderr at level info. */
  logger?: Logger;
  /**
   * Compiles the input schemas. Defaults to draft-07, strict, allErrors, useDefaults, formats not validated
   * (pass your own Ajv with ajv-formats to validate `format`).
   */
  ajv?: Ajv;
}

export const DEFAULT_TOOL_SERVER_OPTIONS = {
  port: 8080,
  host: '0.0.0.0',
  bodyLimitBytes: 1024 * 1024,
  toolTimeoutMs: 30_000,
  maxConcurrentCalls: 64,
  shutdownGraceMs: 10_000,
  name: 'hearth-tool-server',
  version: '0.1.0',
} satisfies Required<Omit<ToolServerOptions, 'tools' | 'apiKey' | 'logger' | 'ajv'>>;

export interface ToolServer {
  /** Starts listening; idempotent (a second call returns the first's promise). Rejects if the port is taken. */
  listen(): Promise<{ port: number }>;
  /** Stops accepting, lets running calls finish within shutdownGraceMs, then aborts the rest. Idempotent. */
  close(): Promise<void>;
  /** Same as close(). */
  dispose(): Promise<void>;
  /** The bound port once listening (the real one when configured as 0); before that, the configured port. */
  readonly port: number;
  /** What GET /api/v1/mcp/tools lists. */
  readonly tools: ToolDescription[];
}

/** The kit's edge: the same exchange and router as the service, with the tool-server error body. */
const TOOL_SERVER_STYLE: EdgeStyle = {
  jsonHeaders: [
    ['content-type', 'application/json; charset=utf-8'],
    ['cache-control', 'no-store'],
  ],
  errorBody: (err: ApiError) => toToolErrorBody(err),
};

function positiveInteger(name: string, value: number, min = 1): number {
  if (!Number.isInteger(value) || value < min)
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  return value;
}

function portFromEnv(): number | undefined {
  const raw = process.env.PORT;
  if (raw === undefined || raw.trim() === '') return undefined;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) > 65535)
    throw new RangeError(`PORT must be an integer 0..65535, got '${raw}'`);
  return Number(raw);
}

function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined || value === '') return true; // lenient: a bare `curl --data` body without a type is parsed as JSON
  const type = value.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

class UwsToolServer implements ToolServer {
  readonly #settings: Required<Omit<ToolServerOptions, 'tools' | 'apiKey' | 'logger' | 'ajv'>>;
  readonly #log: Logger;
  readonly #registry: ToolRegistry;
  readonly #auth: BearerAuth;
  readonly #mcp: McpEndpoint;
  readonly #toolListJson: string;
  /** Fires when the shutdown grace period ends: running calls are told to stop. */
  readonly #shutdown = new AbortController();
  /** POSTs on the call path from acceptance to response (or abandonment). */
  readonly #inFlight = new Set<HttpExchange>();
  #app: TemplatedApp | null = null;
  #listenSocket: us_listen_socket | null = null;
  #listening: Promise<{ port: number }> | null = null;
  #closing: Promise<void> | null = null;
  #boundPort: number | null = null;

  constructor(options: ToolServerOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('createToolServer needs an options object');
    const merged = {
      ...DEFAULT_TOOL_SERVER_OPTIONS,
      port: options.port ?? portFromEnv() ?? DEFAULT_TOOL_SERVER_OPTIONS.port,
    };
    for (const [key, value] of Object.entries(options))
      if (value !== undefined && key in merged) (merged as Record<string, unknown>)[key] = value;
    this.#settings = merged;
    positiveInteger('port', merged.port, 0);
    if (merged.port > 65535) throw new RangeError(`port must be 0..65535, got ${merged.port}`);
    positiveInteger('bodyLimitBytes', merged.bodyLimitBytes);
    positiveInteger('toolTimeoutMs', merged.toolTimeoutMs);
    positiveInteger('maxConcurrentCalls', merged.maxConcurrentCalls);
    positiveInteger('shutdownGraceMs', merged.shutdownGraceMs, 0);
    if (options.apiKey === undefined)
      throw new TypeError('apiKey is required: a key string, or null to serve without authentication');

    this.#log = options.logger ?? createLogger('info');
    this.#auth = new BearerAuth(options.apiKey);
    this.#registry = new ToolRegistry(options.tools, options.ajv);
    this.#toolListJson = JSON.stringify({ tools: this.#registry.describe() });
    this.#mcp = new McpEndpoint({
      name: merged.name,
      version: merged.version,
      registry: this.#registry,
      log: this.#log,
      invoke: (tool, args, signal) => this.#invoke(tool, args, 'mcp', signal),
    });
  }

  get port(): number {
    return this.#boundPort ?? this.#settings.port;
  }

  get tools(): ToolDescription[] {
    return this.#registry.describe();
  }

  listen(): Promise<{ port: number }> {
    if (this.#closing) return Promise.reject(new Error('the tool server is closed'));
    this.#listening ??= new Promise((resolve, reject) => {
      const app = uWS.App();
      mountRoutes(app, this.#routes(), () => {}, TOOL_SERVER_STYLE);
      const { host, port } = this.#settings;
      app.listen(host, port, (socket) => {
        if (!socket) {
          reject(new Error(`could not listen on ${host}:${port} (in use or not permitted)`));
          return;
        }
        this.#app = app;
        this.#listenSocket = socket;
        this.#boundPort = uWS.us_socket_local_port(socket as unknown as us_socket);
        this.#log.info('tool server listening', {
          host,
          port: this.#boundPort,
          tools: this.#registry.describe().map((t) => t.name),
          auth: this.#auth.enabled,
        });
        if (!this.#auth.enabled)
          this.#log.warn('tool server has no apiKey: the tool routes are open to anyone who can reach the port');
        resolve({ port: this.#boundPort });
      });
    });
    return this.#listening;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  dispose(): Promise<void> {
    return this.close();
  }

  async #close(): Promise<void> {
    if (this.#listenSocket) uWS.us_listen_socket_close(this.#listenSocket);
    this.#listenSocket = null;
    const settled = () => Promise.all([...this.#inFlight].map((ex) => ex.done));
    if (this.#inFlight.size > 0) await raceTimeout(settled(), this.#settings.shutdownGraceMs);
    this.#shutdown.abort(serverClosing());
    if (this.#inFlight.size > 0) await raceTimeout(settled(), 1_000);
    this.#app = null;
    this.#log.info('tool server closed', { port: this.#boundPort });
  }

  /**
   * The kit's routes. Checks run in the documented order: the router answers 404/405; a handler checks the
   * bearer (401), then for a call content-type (415) and capacity (503) before awaiting the body (413, 400).
   * GET/DELETE on the call path would be MCP's server-to-client stream and session end; stateless mode
   * offers neither (405).
   */
  #routes(): Route[] {
    const authorize = (ex: HttpExchange) => {
      if (this.#closing) ex.closeConnectionAfterResponse();
      if (!this.#auth.accepts(ex.header('authorization'))) throw unauthorized();
    };
    return [
      {
        method: 'GET',
        pattern: HEALTH_PATH,
        name: 'health',
        // While draining, /health says so, for load balancers still holding a kept-alive connection.
        handler: (ex) => {
          if (this.#closing) ex.closeConnectionAfterResponse();
          if (this.#closing) ex.sendJson(503, { ok: false }, [['retry-after', '5']]);
          else ex.sendJson(200, { ok: true });
        },
      },
      {
        method: 'GET',
        pattern: TOOL_LIST_PATH,
        name: 'tools',
        handler: (ex) => {
          authorize(ex);
          ex.sendJsonText(200, this.#toolListJson);
        },
      },
      {
        method: 'POST',
        pattern: TOOL_CALL_PATH,
        name: 'call',
        body: { kind: 'json', limit: this.#settings.bodyLimitBytes },
        handler: (ex) => {
          authorize(ex);
          if (this.#closing) throw serverClosing();
          const contentType = ex.headers.get('content-type');
          if (!isJsonContentType(contentType)) throw unsupportedMediaType(contentType ?? '');
          if (this.#inFlight.size >= this.#settings.maxConcurrentCalls) throw serverBusy(1);
          this.#inFlight.add(ex);
          return this.#answerCall(ex).finally(() => this.#inFlight.delete(ex));
        },
      },
    ];
  }

  async #answerCall(ex: HttpExchange): Promise<void> {
    try {
      let parsed: unknown;
      try {
        parsed = await ex.json();
      } catch (err) {
        if (err instanceof ClientGoneError) return;
        return void ex.sendError(toApiError(err));
      }
      if (parsed === undefined) return void ex.sendError(malformedJson('the body is empty'));
      const callSignal = AbortSignal.any([ex.signal, this.#shutdown.signal]);
      if (isJsonRpcBody(parsed)) return await this.#mcp.handle(ex, parsed, callSignal);

      if (!isPlainObject(parsed))
        return void ex.sendError(
          invalidToolCall('Body must be a JSON object {"tool": string, "args": object}', 'body'),
        );
      const { tool, args = {} } = parsed;
      if (typeof tool !== 'string' || tool === '')
        return void ex.sendError(invalidToolCall("'tool' must be a non-empty string", 'tool'));
      if (!isPlainObject(args)) return void ex.sendError(invalidToolCall("'args' must be a JSON object", 'args'));

      const outcome = await this.#invoke(tool, args, 'http', callSignal);
      if (outcome.ok) ex.sendJsonText(200, outcome.json);
      else if (outcome.failure !== 'aborted') ex.sendError(outcome.error);
      else if (this.#shutdown.signal.aborted) ex.sendError(serverClosing());
      // else: the client is gone; there is no one to answer.
    } catch (err) {
      this.#log.error('tool call failed outside the handler', { err: err instanceof Error ? err : String(err) });
      ex.sendError(internalError());
    }
  }

  #invoke(tool: string, args: Record<string, unknown>, transport: 'http' | 'mcp', signal: AbortSignal) {
    return invokeTool(
      this.#registry,
      { tool, args, transport, signal, timeoutMs: this.#settings.toolTimeoutMs },
      this.#log,
    );
  }
}

function raceTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Builds a tool server from data; throws at once (not on a request) on any bad option, tool definition
 * or input_schema. Call `listen()` to serve.
 */
export function createToolServer(options: ToolServerOptions): ToolServer {
  return new UwsToolServer(options);
}
