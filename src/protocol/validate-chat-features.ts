import { echoed, invalidRequest } from '../errors/index.ts';
import type { ChatRequest, FunctionTool, JsonSchema, ResponseFormat, ToolCall, ToolChoice } from './chat-request.ts';
import { absent, type Json, requiredFieldError } from './json-fields.ts';

/**
 * Validation of the chat-completions fields beyond plain chat: tools, tool_choice, parallel_tool_calls,
 * response_format, logprobs / top_logprobs, the llama-server sampler extensions (top_k, min_p,
 * repetition_penalty), and the tool fields of messages. Used by validate-chat-request.ts for both the shared
 * and the project endpoint. Pure; every refusal is a 400 naming the field.
 */

/** OpenAI's rule for function names. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Defaults to 128 (OpenAI's limit). */
export const MAX_TOOLS = 128;
export const MAX_TOP_LOGPROBS = 20;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optionalBoolean(v: unknown, param: string): boolean | undefined {
  if (absent(v)) return undefined;
  if (typeof v !== 'boolean') throw invalidRequest(`'${param}' must be a boolean`, param, 'invalid_type');
  return v;
}

/** A function name by OpenAI's rule (1-64 of [a-zA-Z0-9_-]); a 400 naming `param` otherwise. */
export function functionName(v: unknown, param: string): string {
  if (typeof v !== 'string') throw requiredFieldError(`'${param}' must be a string`, param, v);
  if (!FUNCTION_NAME.test(v))
    throw invalidRequest(
      `'${param}' must be 1 to 64 letters, digits, '_' or '-'; got ${JSON.stringify(echoed(v))}`,
      param,
      'invalid_value',
    );
  return v;
}

function schemaObject(v: unknown, param: string): JsonSchema {
  if (!isObject(v)) throw invalidRequest(`'${param}' must be a JSON Schema object`, param, 'invalid_type');
  return v;
}

export function parseTools(raw: unknown): FunctionTool[] {
  if (absent(raw)) return [];
  if (!Array.isArray(raw)) throw invalidRequest("'tools' must be an array", 'tools', 'invalid_type');
  if (raw.length > MAX_TOOLS)
    throw invalidRequest(`'tools' accepts at most ${MAX_TOOLS} functions`, 'tools', 'invalid_value');
  const seen = new Set<string>();
  return raw.map((t, i) => {
    const p = `tools[${i}]`;
    if (!isObject(t)) throw invalidRequest(`'${p}' must be an object`, p, 'invalid_type');
    if (t.type !== 'function')
      throw invalidRequest(
        `'${p}.type' must be 'function'; got ${JSON.stringify(t.type)}`,
        `${p}.type`,
        'invalid_value',
      );
    const f = t.function;
    if (!isObject(f)) throw requiredFieldError(`'${p}.function' must be an object`, `${p}.function`, f);
    const name = functionName(f.name, `${p}.function.name`);
    if (seen.has(name))
      throw invalidRequest(
        `'${p}.function.name' repeats the function '${name}'`,
        `${p}.function.name`,
        'invalid_value',
      );
    seen.add(name);
    if (!absent(f.description) && typeof f.description !== 'string')
      throw invalidRequest(`'${p}.function.description' must be a string`, `${p}.function.description`, 'invalid_type');
    const parameters = absent(f.parameters)
      ? { type: 'object', properties: {} }
      : schemaObject(f.parameters, `${p}.function.parameters`);
    return {
      name,
      description: typeof f.description === 'string' ? f.description : undefined,
      parameters,
      strict: optionalBoolean(f.strict, `${p}.function.strict`) ?? false,
    };
  });
}

export function parseToolChoice(raw: unknown, tools: FunctionTool[]): ToolChoice {
  if (absent(raw)) return tools.length > 0 ? 'auto' : 'none';
  let choice: ToolChoice;
  if (raw === 'none' || raw === 'auto' || raw === 'required') choice = raw;
  else if (isObject(raw) && raw.type === 'function' && isObject(raw.function))
    choice = { name: functionName(raw.function.name, 'tool_choice.function.name') };
  else
    throw invalidRequest(
      '\'tool_choice\' must be \'none\', \'auto\', \'required\' or {"type":"function","function":{"name":...}}',
      'tool_choice',
      'invalid_value',
    );
  return checkToolChoice(choice, tools);
}

/** A forcing choice needs tools, and a named one a declared function (chat and Responses alike). */
export function checkToolChoice(choice: ToolChoice, tools: FunctionTool[]): ToolChoice {
  if (choice !== 'none' && choice !== 'auto' && tools.length === 0)
    throw invalidRequest("'tool_choice' requires 'tools'", 'tool_choice', 'invalid_value');
  if (typeof choice === 'object' && !tools.some((t) => t.name === choice.name)) {
    throw invalidRequest(
      `'tool_choice' names the function '${choice.name}', which is not in 'tools'`,
      'tool_choice',
      'invalid_value',
    );
  }
  return choice;
}

export function parseResponseFormat(raw: unknown): ResponseFormat {
  if (absent(raw)) return { type: 'text' };
  if (!isObject(raw)) throw invalidRequest("'response_format' must be an object", 'response_format', 'invalid_type');
  if (raw.type === 'text' || raw.type === 'json_object') return { type: raw.type };
  if (raw.type !== 'json_schema')
    throw invalidRequest(
      `'response_format.type' must be 'text', 'json_object' or 'json_schema'; got ${JSON.stringify(raw.type)}`,
      'response_format.type',
      'invalid_value',
    );
  const js = raw.json_schema;
  if (!isObject(js))
    throw invalidRequest(
      "'response_format.json_schema' is required for type 'json_schema'",
      'response_format.json_schema',
      'missing_required_parameter',
    );
  return {
    type: 'json_schema',
    name: functionName(js.name, 'response_format.json_schema.name'),
    schema: absent(js.schema) ? { type: 'object' } : schemaObject(js.schema, 'response_format.json_schema.schema'),
    strict: optionalBoolean(js.strict, 'response_format.json_schema.strict') ?? false,
    schemaParam: 'response_format.json_schema.schema',
  };
}

/** `logprobs` + `top_logprobs` -> topLogprobs (undefined: none asked for). */
export function parseLogprobs(body: Json): number | undefined {
  const logprobs = optionalBoolean(body.logprobs, 'logprobs') ?? false;
  const top = body.top_logprobs;
  if (absent(top)) return logprobs ? 0 : undefined;
  if (typeof top !== 'number' || !Number.isInteger(top) || top < 0 || top > MAX_TOP_LOGPROBS) {
    throw invalidRequest(
      `'top_logprobs' must be an integer from 0 to ${MAX_TOP_LOGPROBS}`,
      'top_logprobs',
      'invalid_value',
    );
  }
  if (!logprobs) throw invalidRequest("'top_logprobs' requires 'logprobs': true", 'top_logprobs', 'invalid_value');
  return top;
}

function boundedNumber(
  body: Json,
  field: string,
  ok: (v: number) => boolean,
  rule: string,
  integer = false,
): number | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)))
    throw invalidRequest(`'${field}' must be ${integer ? 'an integer' : 'a number'}`, field, 'invalid_type');
  if (!ok(v)) throw invalidRequest(`'${field}' must be ${rule}, got ${v}`, field, 'invalid_value');
  return v;
}

/** top_k (>= 0, 0 = off), min_p (0..1), repetition_penalty (> 0 and <= 10, 1 = off): llama-server / vLLM extensions. */
export function parseSamplerExtensions(body: Json): Pick<ChatRequest, 'topK' | 'minP' | 'repetitionPenalty'> {
  return {
    topK: boundedNumber(body, 'top_k', (v) => v >= 0 && v <= 100_000, 'between 0 and 100000', true),
    minP: boundedNumber(body, 'min_p', (v) => v >= 0 && v <= 1, 'between 0 and 1'),
    repetitionPenalty: boundedNumber(body, 'repetition_penalty', (v) => v > 0 && v <= 10, 'above 0 and at most 10'),
  };
}

/** The calls of an assistant message (`messages[i].tool_calls`). */
export function parseMessageToolCalls(raw: unknown, param: string): ToolCall[] | undefined {
  if (absent(raw)) return undefined;
  if (!Array.isArray(raw)) throw invalidRequest(`'${param}' must be an array`, param, 'invalid_type');
  return raw.map((c, j) => {
    const p = `${param}[${j}]`;
    if (!isObject(c)) throw invalidRequest(`'${p}' must be an object`, p, 'invalid_type');
    if (typeof c.id !== 'string' || c.id === '')
      throw invalidRequest(`'${p}.id' must be a non-empty string`, `${p}.id`, 'invalid_type');
    if (!absent(c.type) && c.type !== 'function')
      throw invalidRequest(`'${p}.type' must be 'function'`, `${p}.type`, 'invalid_value');
    const f = c.function;
    if (!isObject(f)) throw invalidRequest(`'${p}.function' must be an object`, `${p}.function`, 'invalid_type');
    const name = functionName(f.name, `${p}.function.name`);
    if (typeof f.arguments !== 'string')
      throw invalidRequest(
        `'${p}.function.arguments' must be a string (JSON text)`,
        `${p}.function.arguments`,
        'invalid_type',
      );
    return { id: c.id, name, arguments: f.arguments };
  });
}

/** `messages[i].tool_call_id` of a tool message. */
export function parseToolCallId(raw: unknown, param: string): string {
  if (typeof raw !== 'string' || raw === '')
    throw requiredFieldError(`'${param}' must be a non-empty string`, param, raw);
  return raw;
}
