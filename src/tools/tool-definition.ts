/**
 * What an application hands the tool-server kit: tools described by a JSON Schema and an async handler
 * (service-spec 4.5; contract.md "Tool-server pattern").
 */

/** Anything `JSON.stringify` turns into JSON without loss. A handler's result must be one of these. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * A JSON Schema for a tool's arguments. The kit requires `type: 'object'` and a `properties` object
 * (service-spec 4.5); every other keyword is standard JSON Schema (draft-07, as compiled by ajv).
 */
export interface ToolInputSchema {
  type: 'object';
  properties: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean | Record<string, unknown>;
  [keyword: string]: unknown;
}

/** Which front end a call arrived through. */
export type ToolTransport = 'http' | 'mcp';

/** Per-call context. Lives for one call; the kit owns it. */
export interface ToolContext {
  /** The tool's name as called. */
  readonly tool: string;
  /** `http` for `POST /api/v1/mcp {tool,args}`, `mcp` for a JSON-RPC `tools/call`. */
  readonly transport: ToolTransport;
  /**
   * Aborted when the call's time-out (`toolTimeoutMs`) passes, when the client goes away, or when the
   * server shuts down past its grace period. Pass it to fetch() and friends; after it fires, the
   * handler's result is discarded.
   */
  readonly signal: AbortSignal;
}

/**
 * One tool. `handler` runs on the main thread, only after `args` passed `input_schema`; it resolves to the
 * JSON result sent to the client or throws. Throwing a `ToolError` sends its status and message; any other
 * error is logged and answered with a generic 500 (no message or stack leaves the process).
 */
export interface ToolDefinition<Args = Record<string, unknown>> {
  /** 1 to 128 characters of `A-Z a-z 0-9 _ - .` (the MCP tool-name rule); unique within a server. */
  name: string;
  /** What the tool does, for humans and for models choosing a tool. */
  description: string;
  input_schema: ToolInputSchema;
  // Method syntax on purpose: it keeps `ToolDefinition<{ city: string }>` assignable to `ToolDefinition`.
  handler(args: Args, ctx: ToolContext): Promise<JsonValue> | JsonValue;
}

/** Identity helper that types `args` for a handler: `defineTool<{ city: string }>({ ... })`. */
export function defineTool<Args = Record<string, unknown>>(tool: ToolDefinition<Args>): ToolDefinition<Args> {
  return tool;
}

/** The public description of a tool (`GET /api/v1/mcp/tools`). */
export interface ToolDescription {
  name: string;
  description: string;
  input_schema: ToolInputSchema;
}
