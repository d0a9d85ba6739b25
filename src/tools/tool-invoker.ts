/**
 * Runs one tool call: look-up, argument validation, the handler under a time-out and an abort signal,
 * and the mapping of whatever happens to an outcome. Shared by both front ends (`{tool,args}` over HTTP
 * and MCP `tools/call`), so the two can never disagree. Main thread only.
 */
import { ApiError } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import type { JsonValue, ToolTransport } from './tool-definition.ts';
import type { ToolRegistry } from './tool-registry.ts';
import { invalidArguments, toolFailed, toolNotFound, toolResultNotJson, toolTimedOut } from './tool-errors.ts';

export type InvocationFailure =
  /** No tool of that name. */
  | 'unknown_tool'
  /** args failed input_schema; the handler did not run. */
  | 'invalid_arguments'
  /** The handler threw an ApiError/ToolError: its status and message are meant for the client. */
  | 'tool_error'
  /** The handler threw something else, or returned a non-JSON value: logged, answered generically. */
  | 'failed'
  | 'timeout'
  /** The caller's signal fired (client gone, server closing). Nobody is listening for an answer. */
  | 'aborted';

export type InvocationOutcome =
  | { ok: true; result: JsonValue; /** `result` serialized once. */ json: string }
  | { ok: false; failure: InvocationFailure; error: ApiError };

export interface InvocationRequest {
  tool: string;
  args: Record<string, unknown>;
  transport: ToolTransport;
  /** Fires when the client is gone or the server is closing; the handler's signal follows it. */
  signal: AbortSignal;
  timeoutMs: number;
}

class TimeoutSignal extends Error {}

/** Never rejects: every path ends in an InvocationOutcome. */
export async function invokeTool(
  registry: ToolRegistry,
  req: InvocationRequest,
  log: Logger,
): Promise<InvocationOutcome> {
  const tool = registry.get(req.tool);
  if (!tool) return { ok: false, failure: 'unknown_tool', error: toolNotFound(req.tool) };

  const issues = tool.check(req.args);
  if (issues.length > 0) {
    const first = issues[0]!;
    return { ok: false, failure: 'invalid_arguments', error: invalidArguments(first.message, first.path, issues) };
  }

  const controller = new AbortController();
  const started = performance.now();
  let stop: (reason: unknown) => void = () => {};
  const stopped = new Promise<never>((_, reject) => (stop = reject));
  stopped.catch(() => {}); // observed by the race below; this only keeps an early rejection from being 'unhandled'
  const onOuterAbort = () => {
    controller.abort(req.signal.reason);
    stop(req.signal.reason);
  };
  const timer = setTimeout(() => {
    const reason = new TimeoutSignal();
    controller.abort(toolTimedOut(req.tool, req.timeoutMs));
    stop(reason);
  }, req.timeoutMs);
  if (req.signal.aborted) onOuterAbort();
  else req.signal.addEventListener('abort', onOuterAbort, { once: true });

  const fields = { tool: req.tool, transport: req.transport };
  try {
    const ctx = { tool: req.tool, transport: req.transport, signal: controller.signal };
    const running = (async () => tool.definition.handler(req.args, ctx))();
    running.catch(() => {}); // a handler that rejects after we stopped listening must not be an unhandled rejection
    const value = await Promise.race([running, stopped]);
    const result: JsonValue = value === undefined ? null : value;
    let json: string | undefined;
    try {
      json = JSON.stringify(result);
    } catch {
      json = undefined;
    }
    if (json === undefined) {
      log.error('tool returned a value that is not JSON', fields);
      return { ok: false, failure: 'failed', error: toolResultNotJson(req.tool) };
    }
    log.debug('tool call finished', { ...fields, duration_ms: Math.round(performance.now() - started) });
    return { ok: true, result, json };
  } catch (err) {
    if (err instanceof TimeoutSignal) {
      log.warn('tool call timed out', { ...fields, timeout_ms: req.timeoutMs });
      return { ok: false, failure: 'timeout', error: toolTimedOut(req.tool, req.timeoutMs) };
    }
    if (req.signal.aborted) return { ok: false, failure: 'aborted', error: toolFailed(req.tool) };
    if (err instanceof ApiError) {
      log.info('tool answered an error', { ...fields, status: err.status, code: err.code });
      return { ok: false, failure: 'tool_error', error: err };
    }
    log.error('tool handler threw', { ...fields, err: err instanceof Error ? err : describeThrown(err) });
    return { ok: false, failure: 'failed', error: toolFailed(req.tool) };
  } finally {
    clearTimeout(timer);
    req.signal.removeEventListener('abort', onOuterAbort);
  }
}

/** A log-safe description of a thrown non-Error (`String()` itself throws for e.g. `Object.create(null)`). */
function describeThrown(value: unknown): string {
  try {
    return `${typeof value}: ${String(value)}`.slice(0, 200);
  } catch {
    return `${typeof value} (not printable)`;
  }
}
