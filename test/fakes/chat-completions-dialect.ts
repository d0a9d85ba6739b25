import type { IncomingHttpHeaders } from 'node:http';
import type { NormalizedMessage, NormalizedRequest, VendorDialect } from './dialect.ts';
import { isObj, type JsonObject, num } from './vendor-json.ts';

/** Pieces shared by the OpenAI and Mistral fakes (both speak the chat-completions wire format). */

export function bearerKey(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (typeof auth !== 'string') return undefined;
  const match = /^Bearer (.+)$/i.exec(auth);
  return match?.[1];
}

export function chatCompletionsRoute(
  method: string,
  url: URL,
  body: unknown,
  basePath: string,
): { stream: boolean; model: string } | null {
  if (method !== 'POST' || url.pathname !== `${basePath}/chat/completions`) return null;
  const b = isObj(body) ? body : {};
  return { stream: b.stream === true, model: typeof b.model === 'string' ? b.model : '' };
}

const parseArgs = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

function describeMessage(m: JsonObject): NormalizedMessage {
  if (m.role === 'tool')
    return {
      role: 'tool',
      content: String(m.content),
      toolCallId: typeof m.tool_call_id === 'string' ? m.tool_call_id : undefined,
    };
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObj) : [];
  const message: NormalizedMessage = {
    role: m.role === 'assistant' ? 'assistant' : 'user',
    content: m.content === null || m.content === undefined ? '' : String(m.content),
  };
  if (calls.length > 0) {
    message.toolCalls = calls.map((c) => {
      const fn = isObj(c.function) ? c.function : {};
      return {
        id: typeof c.id === 'string' ? c.id : undefined,
        name: String(fn.name),
        arguments: parseArgs(fn.arguments),
      };
    });
  }
  return message;
}

/** Reads a chat-completions body back into neutral terms; `maxTokensFields` and `seedField` differ per vendor. */
function describeChatCompletions(body: unknown, maxTokensFields: string[], seedField: string): NormalizedRequest {
  const b = isObj(body) ? body : {};
  const raw = Array.isArray(b.messages) ? b.messages.filter(isObj) : [];
  const system = raw.filter((m) => m.role === 'system').map((m) => String(m.content));
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop.map(String) : undefined;
  let maxTokens: number | undefined;
  for (const f of maxTokensFields) maxTokens ??= num(b[f]);
  const tools = Array.isArray(b.tools)
    ? b.tools.filter(isObj).map((t) => (isObj(t.function) ? t.function : {}))
    : undefined;
  const choice = b.tool_choice;
  const rf = isObj(b.response_format) ? b.response_format : undefined;
  return {
    model: typeof b.model === 'string' ? b.model : '',
    stream: b.stream === true,
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages: raw.filter((m) => m.role !== 'system').map(describeMessage),
    temperature: num(b.temperature),
    topP: num(b.top_p),
    maxTokens,
    stop,
    seed: num(b[seedField]),
    tools: tools?.map((f) => ({
      name: String(f.name),
      description: typeof f.description === 'string' ? f.description : undefined,
      parameters: f.parameters,
    })),
    toolChoice:
      choice === 'any'
        ? 'required'
        : choice === 'auto' || choice === 'required' || choice === 'none'
          ? choice
          : isObj(choice) && isObj(choice.function)
            ? { name: String(choice.function.name) }
            : undefined,
    parallelToolCalls: typeof b.parallel_tool_calls === 'boolean' ? b.parallel_tool_calls : undefined,
    responseFormat:
      rf?.type === 'json_object'
        ? { type: 'json_object' }
        : rf?.type === 'json_schema' && isObj(rf.json_schema)
          ? { type: 'json_schema', schema: rf.json_schema.schema }
          : undefined,
  };
}

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The tool rules OpenAI (and Mistral) enforce, as an error message or null: function tools with valid
 * names; tool_choice / parallel_tool_calls only with tools; a named choice must be declared; every tool
 * message answers a tool_call id of an earlier assistant message; assistant arguments are JSON text;
 * response_format json_schema carries a name and a schema.
 */
export function chatCompletionsToolProblem(b: JsonObject, choices: readonly string[]): string | null {
  const tools = b.tools;
  if (tools !== undefined) {
    if (!Array.isArray(tools) || tools.length === 0)
      return "Invalid 'tools': empty array. Expected an array with minimum length 1.";
    for (const [i, t] of tools.entries()) {
      if (!isObj(t) || t.type !== 'function' || !isObj(t.function))
        return `Invalid value for 'tools[${i}].type': expected 'function'.`;
      if (typeof t.function.name !== 'string' || !FUNCTION_NAME.test(t.function.name))
        return `Invalid 'tools[${i}].function.name': string does not match pattern.`;
    }
  }
  if (b.tool_choice !== undefined) {
    if (tools === undefined)
      return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.";
    const c = b.tool_choice;
    if (typeof c === 'string' && !choices.includes(c)) return `Invalid value for 'tool_choice': '${c}'.`;
    if (isObj(c)) {
      const name = isObj(c.function) ? c.function.name : undefined;
      if (!(tools as JsonObject[]).some((t) => isObj(t.function) && t.function.name === name))
        return `Invalid 'tool_choice': function '${String(name)}' is not among the tools.`;
    }
  }
  if (b.parallel_tool_calls !== undefined && tools === undefined)
    return "Invalid value for 'parallel_tool_calls': only allowed when 'tools' are specified.";
  const ids = new Set<string>();
  for (const [i, m] of (Array.isArray(b.messages) ? b.messages : []).entries()) {
    if (!isObj(m)) continue;
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls) {
        if (!isObj(c) || typeof c.id !== 'string' || !isObj(c.function) || typeof c.function.arguments !== 'string')
          return `Invalid 'messages[${i}].tool_calls': each needs an id and function.arguments as a string.`;
        ids.add(c.id);
      }
    }
    if (m.role === 'tool' && (typeof m.tool_call_id !== 'string' || !ids.has(m.tool_call_id))) {
      return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
    }
  }
  const rf = b.response_format;
  if (rf !== undefined) {
    if (!isObj(rf) || !['text', 'json_object', 'json_schema'].includes(String(rf.type)))
      return "Invalid value for 'response_format.type'.";
    if (
      rf.type === 'json_schema' &&
      (!isObj(rf.json_schema) || typeof rf.json_schema.name !== 'string' || !isObj(rf.json_schema.schema))
    )
      return "Missing required parameter: 'response_format.json_schema.name' / 'schema'.";
  }
  return null;
}

/** `data: <json>\n\n`, the chat-completions SSE framing. */
export const dataEvent = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;
export const DONE_EVENT = 'data: [DONE]\n\n';
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

/**
 * What every chat-completions dialect shares: POST /v1/chat/completions, Bearer keys, SSE, `stop` and `tool_calls`,
 * and reading a body back (see describeChatCompletions for the two fields that differ per vendor).
 */
export const chatCompletionsBase = (maxTokensFields: string[], seedField: string) =>
  ({
    basePath: '/v1',
    stopReason: 'stop',
    toolStopReason: 'tool_calls',
    streamHeaders: SSE_HEADERS,
    route: (method, url, body) => chatCompletionsRoute(method, url, body, '/v1'),
    apiKeyOf: (headers) => bearerKey(headers),
    describe: (body) => describeChatCompletions(body, maxTokensFields, seedField),
  }) satisfies Partial<VendorDialect>;
