/**
 * Errors of the tool-server kit. They are ApiErrors (status, code, Retry-After) but serialize to the
 * tool-server body of service-spec 4.5: `{"error": "<message>", "code": "<code>", ...details}`, where
 * `error` is always a string, never the OpenAI error object used by the inference endpoints.
 */
import { ApiError, type ApiErrorType } from '../errors/index.ts';

export interface ToolErrorOptions {
  /** A stable machine-readable code. Defaults to `tool_error`. */
  code?: string;
  /** Extra fields merged into the JSON body. Never secrets. */
  details?: Record<string, unknown>;
  /** Seconds; sent as `Retry-After`. */
  retryAfter?: number;
}

function typeForStatus(status: number): ApiErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'unavailable_error';
  if (status === 502 || status === 504) return 'upstream_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * What a tool handler throws to answer with a chosen status and a client-facing message, e.g.
 * `throw new ToolError(502, 'The weather service is down', { code: 'upstream_failed' })`.
 * Over MCP it becomes a `tools/call` result with `isError: true` carrying the message.
 */
export class ToolError extends ApiError {
  constructor(status: number, message: string, options: ToolErrorOptions = {}) {
    if (!Number.isInteger(status) || status < 400 || status > 599)
      throw new RangeError(`ToolError status must be 400..599, got ${status}`);
    super({
      status,
      message,
      type: typeForStatus(status),
      code: options.code ?? 'tool_error',
      param: null,
      retryAfter: options.retryAfter,
      details: options.details,
    });
    this.name = 'ToolError';
  }
}

/** The JSON body of every kit error response. */
export interface ToolErrorBody {
  error: string;
  code: string | null;
  [detail: string]: unknown;
}

/** `error` and `code` first (readable in curl output); details can never overwrite them. */
export function toToolErrorBody(err: ApiError): ToolErrorBody {
  return Object.assign({ error: err.message, code: err.code }, err.details, { error: err.message, code: err.code });
}

export const toolNotFound = (name: string) => new ToolError(404, `Unknown tool '${name}'`, { code: 'tool_not_found' });

/** `args` failed the tool's input_schema. `path` is a JSON Pointer into args ('' for args itself). */
export const invalidArguments = (message: string, path: string, errors: Array<{ path: string; message: string }>) =>
  new ToolError(400, message, { code: 'invalid_arguments', details: { path, errors } });

/** The `{tool, args}` envelope itself is wrong (missing tool, args not an object). */
export const invalidToolCall = (message: string, param: string) =>
  new ToolError(400, message, { code: 'invalid_tool_call', details: { param } });

export const toolFailed = (name: string) => new ToolError(500, `Tool '${name}' failed`, { code: 'tool_failed' });

export const toolTimedOut = (name: string, ms: number) =>
  new ToolError(504, `Tool '${name}' did not finish within ${ms} ms`, { code: 'tool_timeout' });

export const toolResultNotJson = (name: string) =>
  new ToolError(500, `Tool '${name}' returned a value that is not JSON`, { code: 'tool_result_not_json' });

export const serverBusy = (retryAfter: number) =>
  new ToolError(503, 'The tool server is at capacity; retry shortly', { code: 'server_busy', retryAfter });

export const serverClosing = () =>
  new ToolError(503, 'The tool server is shutting down', { code: 'shutting_down', retryAfter: 5 });
