/**
 * The Model Context Protocol face of `/api/v1/mcp`: Streamable HTTP, served by the official SDK's
 * web-standard transport (`WebStandardStreamableHTTPServerTransport`, Request -> Response), bridged to uWS.
 *
 * Mode: stateless. Each JSON-RPC POST gets a fresh SDK `Server` + transport (no `Mcp-Session-Id`), answered
 * with a JSON body (`enableJsonResponse`), and both are closed when the answer is sent. No session map to
 * expire, nothing to share between requests, any replica can answer any request. The cost: no
 * server-initiated messages (no GET SSE stream: GET/DELETE on the path answer 405, which the MCP spec allows),
 * and no progress notifications during a long tool call.
 *
 * The low-level SDK `Server` is used, not `McpServer`, because tools here carry raw JSON Schemas (McpServer
 * wants zod). Calls go through the same `invokeTool` as the `{tool,args}` protocol. Main thread only.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { Logger } from '../log/logger.ts';
import type { InvocationOutcome } from './tool-invoker.ts';
import type { ToolRegistry } from './tool-registry.ts';
import { toToolErrorBody } from './tool-errors.ts';
import type { HttpExchange } from '../http/http-exchange.ts';

export interface McpEndpointOptions {
  /** serverInfo.name in the initialize result. */
  name: string;
  /** serverInfo.version in the initialize result. */
  version: string;
  registry: ToolRegistry;
  /** Runs one call (validation, time-out, error mapping); `signal` fires when the caller is gone. */
  invoke(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<InvocationOutcome>;
  log: Logger;
}

/** Headers not forwarded into the web Request: the body is handed over already parsed. */
const NOT_FORWARDED = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade']);
const TOOL_CALL_URL_FALLBACK = 'http://localhost/api/v1/mcp';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON-RPC message or batch: what routes a POST on /api/v1/mcp to MCP instead of `{tool,args}`. */
export function isJsonRpcBody(body: unknown): boolean {
  return Array.isArray(body) || (isPlainObject(body) && 'jsonrpc' in body);
}

function toCallToolResult(outcome: InvocationOutcome): CallToolResult {
  if (outcome.ok) {
    // Structured content for clients that read it, the same JSON as text for those that do not (MCP spec).
    const result: CallToolResult = { content: [{ type: 'text', text: outcome.json }] };
    if (isPlainObject(outcome.result)) result.structuredContent = outcome.result;
    return result;
  }
  // Tool-level failures (bad arguments included) are results with isError, so a model can read and retry.
  return {
    content: [{ type: 'text', text: outcome.error.message }],
    structuredContent: toToolErrorBody(outcome.error),
    isError: true,
  };
}

export class McpEndpoint {
  readonly #options: McpEndpointOptions;
  readonly #tools: Tool[];
  /** Shared by every per-request Server; the SDK would otherwise build a new Ajv for each. */
  readonly #validator = new AjvJsonSchemaValidator();

  constructor(options: McpEndpointOptions) {
    this.#options = options;
    this.#tools = options.registry
      .describe()
      .map((t) => ({ name: t.name, description: t.description, inputSchema: t.input_schema as Tool['inputSchema'] }));
  }

  #createServer(callSignal: AbortSignal): Server {
    const server = new Server(
      { name: this.#options.name, version: this.#options.version },
      { capabilities: { tools: { listChanged: false } }, jsonSchemaValidator: this.#validator },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.#tools }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const { name, arguments: args = {} } = request.params;
      if (!this.#options.registry.get(name)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      const outcome = await this.#options.invoke(name, args, AbortSignal.any([extra.signal, callSignal]));
      if (!outcome.ok && outcome.failure === 'aborted')
        throw new McpError(ErrorCode.RequestTimeout, 'The call was cancelled');
      return toCallToolResult(outcome);
    });
    server.onerror = (err) => this.#options.log.debug('mcp transport error', { err: err.message });
    return server;
  }

  /**
   * Answers one JSON-RPC POST whose body is already read and parsed. `callSignal` fires when the
   * client is gone or the server is closing. Resolves when the response is sent or abandoned.
   */
  async handle(exchange: HttpExchange, body: unknown, callSignal: AbortSignal): Promise<void> {
    const headers = new Headers();
    for (const [name, value] of exchange.headers) {
      if (NOT_FORWARDED.has(name)) continue;
      try {
        headers.set(name, value);
      } catch {
        // a value the Fetch API refuses (it is not a header the transport reads): left out
      }
    }
    let url: URL;
    try {
      url = new URL(
        `${exchange.url}${exchange.query ? `?${exchange.query}` : ''}`,
        `http://${exchange.headers.get('host') ?? 'localhost'}`,
      );
    } catch {
      url = new URL(TOOL_CALL_URL_FALLBACK);
    }
    const request = new Request(url, { method: exchange.method, headers });

    const server = this.#createServer(callSignal);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      // If the client leaves mid-call the SDK may never settle handleRequest: stop waiting when the exchange ends.
      const response = await Promise.race([
        transport.handleRequest(request, { parsedBody: body }),
        exchange.done.then(() => null),
      ]);
      if (response === null) return;
      const text = response.body ? await response.text() : '';
      const out: Array<[string, string]> = [];
      response.headers.forEach((value, name) => out.push([name, value]));
      exchange.send(response.status, text, out);
    } finally {
      await server.close().catch(() => {});
    }
  }
}
