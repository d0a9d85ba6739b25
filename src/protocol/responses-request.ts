import { parseRequestPriority } from './priority.ts';
import { invalidRequest, unsupportedParameter } from '../errors/index.ts';
import {
  type ChatMessage,
  type ChatRequest,
  type FunctionTool,
  parseReasoningEffort,
  type ResponseFormat,
  type ToolCall,
  type ToolChoice,
} from './chat-request.ts';
import { hexId } from './ids.ts';
import { checkToolChoice, functionName as name, MAX_TOOLS, MAX_TOP_LOGPROBS } from './validate-chat-features.ts';
import { absent, checkServiceTier, isObject, type Json, parseMetadata, requiredFieldError } from './json-fields.ts';

/**
 * The OpenAI Responses API request (`POST /responses`), validated and turned into the ChatRequest the shared
 * model answers, plus what the Response object echoes back and what a stored response keeps: `store` (default
 * true, as OpenAI) and `previous_response_id` are read here and honoured by the route (responses-routes.ts);
 * `conversation` and `background` are 400s naming the field. Pure; every refusal is a 400 naming the field.
 */
export interface ResponsesRequest {
  /** The chat request of this turn alone: `instructions` as a system message, then `input`'s messages. */
  chat: ChatRequest;
  /** `instructions` as the system message that opens the prompt (never carried to a continuation, as OpenAI). */
  instructionMessages: ChatMessage[];
  /** `input` as chat messages (what a continuation's history keeps of this turn). */
  inputMessages: ChatMessage[];
  /** `input` as Response input items, each with an id (`GET /responses/{id}/input_items`). */
  inputItems: InputItem[];
  store: boolean;
  previousResponseId: string | null;
  /** Request fields the Response object repeats (OpenAI's shape). */
  echo: ResponseEcho;
  /** `include: ["message.output_text.logprobs"]` */
  includeLogprobs: boolean;
}

export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  temperature: number | null;
  top_p: number | null;
  top_logprobs: number | null;
  tool_choice: 'none' | 'auto' | 'required' | { type: 'function'; name: string };
  tools: Array<{
    type: 'function';
    name: string;
    description: string | null;
    parameters: Record<string, unknown>;
    strict: boolean;
  }>;
  text: {
    format:
      | { type: 'text' }
      | { type: 'json_object' }
      | {
          type: 'json_schema';
          name: string;
          schema: Record<string, unknown>;
          strict: boolean;
          description: string | null;
        };
  };
  user: string | null;
  store: boolean;
  previous_response_id: string | null;
}

/** One item of a Response's input, as `GET /responses/{id}/input_items` lists it. */
export type InputItem = Record<string, unknown> & { id: string; type: string };

/** A Map, not an object literal: a client's role must never find an Object.prototype member ('constructor'). */
const ROLES: ReadonlyMap<string, ChatMessage['role']> = new Map([
  ['user', 'user'],
  ['assistant', 'assistant'],
  ['system', 'system'],
  ['developer', 'system'],
]);
/** Accepted and without effect (nothing is stored or billed; truncation never happens silently: a long input is a 400). */
const HARMLESS = new Set([
  'metadata',
  'user',
  'service_tier',
  'truncation',
  'prompt_cache_key',
  'safety_identifier',
  'stream_options',
]);
const HONOURED = new Set([
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'temperature',
  'top_p',
  'stream',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'include',
  'top_logprobs',
  'reasoning',
  'store',
  'previous_response_id',
  'priority',
]);
/** Fields that need server-side state or features Hearth does not have. */
const STATEFUL = ['conversation', 'background', 'prompt', 'max_tool_calls'];
/** The longest response id taken in `previous_response_id` (Hearth's are `resp_` + 48 hex characters). */
const MAX_RESPONSE_ID = 128;

function number(body: Json, field: string, min: number, max: number, integer = false): number | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)))
    throw invalidRequest(`'${field}' must be ${integer ? 'an integer' : 'a number'}`, field, 'invalid_type');
  if (v < min || v > max)
    throw invalidRequest(`'${field}' must be between ${min} and ${max}, got ${v}`, field, 'invalid_value');
  return v;
}

/** Text of an input message's content: a string or input_text / output_text parts. */
function contentText(raw: unknown, param: string): string {
  if (typeof raw === 'string') return raw;
  if (!Array.isArray(raw))
    throw invalidRequest(`'${param}' must be a string or an array of text parts`, param, 'invalid_type');
  return raw
    .map((part, j) => {
      if (
        isObject(part) &&
        (part.type === 'input_text' || part.type === 'output_text') &&
        typeof part.text === 'string'
      )
        return part.text;
      const type = isObject(part) && typeof part.type === 'string' ? part.type : typeof part;
      throw invalidRequest(
        `'${param}[${j}]' must be an input_text part; '${type}' parts are not supported`,
        `${param}[${j}]`,
        'unsupported_content_part',
      );
    })
    .join('');
}

const textParts = (raw: unknown, type: 'input_text' | 'output_text') =>
  typeof raw === 'string' ? [{ type, text: raw }] : raw;

/** `input` as chat messages and as Response input items (ids given by the client are kept, others made). */
function parseInput(raw: unknown): { messages: ChatMessage[]; items: InputItem[] } {
  const messages: ChatMessage[] = [];
  const items: InputItem[] = [];
  if (typeof raw === 'string') {
    messages.push({ role: 'user', content: raw });
    items.push({ id: hexId('msg'), type: 'message', role: 'user', content: textParts(raw, 'input_text') });
    return { messages, items };
  }
  if (absent(raw)) throw invalidRequest("'input' is required", 'input', 'missing_required_parameter');
  if (!Array.isArray(raw))
    throw invalidRequest("'input' must be a string or an array of input items", 'input', 'invalid_type');
  if (raw.length === 0) throw invalidRequest("'input' must not be empty", 'input', 'empty_array');
  raw.forEach((item, i) => {
    const p = `input[${i}]`;
    if (!isObject(item)) throw invalidRequest(`'${p}' must be an object`, p, 'invalid_type');
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = typeof item.role === 'string' ? ROLES.get(item.role) : undefined;
      if (role === undefined)
        throw invalidRequest(
          `'${p}.role' must be one of user, assistant, system, developer`,
          `${p}.role`,
          'invalid_value',
        );
      messages.push({ role, content: contentText(item.content, `${p}.content`) });
      items.push({
        id: itemId(item, 'msg'),
        type: 'message',
        role: item.role as string,
        content: textParts(item.content, role === 'assistant' ? 'output_text' : 'input_text'),
      });
    } else if (type === 'function_call') {
      if (typeof item.call_id !== 'string' || item.call_id === '')
        throw invalidRequest(`'${p}.call_id' must be a non-empty string`, `${p}.call_id`, 'invalid_type');
      if (typeof item.arguments !== 'string')
        throw invalidRequest(`'${p}.arguments' must be a string (JSON text)`, `${p}.arguments`, 'invalid_type');
      const call: ToolCall = { id: item.call_id, name: name(item.name, `${p}.name`), arguments: item.arguments };
      items.push({
        id: itemId(item, 'fc'),
        type: 'function_call',
        status: 'completed',
        call_id: call.id,
        name: call.name,
        arguments: call.arguments,
      });
      // Calls that follow an assistant turn belong to it (one assistant message, as chat templates expect).
      const last = messages.at(-1);
      if (last?.role === 'assistant') (last.toolCalls ??= []).push(call);
      else messages.push({ role: 'assistant', content: '', toolCalls: [call] });
    } else if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string' || item.call_id === '')
        throw invalidRequest(`'${p}.call_id' must be a non-empty string`, `${p}.call_id`, 'invalid_type');
      const output = contentText(item.output, `${p}.output`);
      messages.push({ role: 'tool', toolCallId: item.call_id, content: output });
      items.push({
        id: itemId(item, 'fco'),
        type: 'function_call_output',
        status: 'completed',
        call_id: item.call_id,
        output,
      });
    } else if (type === 'reasoning') {
      // An earlier answer's reasoning sent back (as SDKs pass `response.output` on): kept as an item, left out of
      // the prompt (chat templates drop earlier reasoning).
      items.push({ ...item, id: itemId(item, 'rs'), type: 'reasoning' });
    } else {
      throw invalidRequest(
        `'${p}.type' ${JSON.stringify(type)} is not supported; use message, function_call, function_call_output or reasoning`,
        `${p}.type`,
        'invalid_value',
      );
    }
  });
  return { messages, items };
}

/** A client's own item id (a short string) is kept; otherwise one is made. */
const itemId = (item: Json, prefix: string) =>
  typeof item.id === 'string' && item.id !== '' && item.id.length <= MAX_RESPONSE_ID ? item.id : hexId(prefix);

function parseTools(raw: unknown): { tools: FunctionTool[]; echo: ResponseEcho['tools'] } {
  if (absent(raw)) return { tools: [], echo: [] };
  if (!Array.isArray(raw)) throw invalidRequest("'tools' must be an array", 'tools', 'invalid_type');
  if (raw.length > MAX_TOOLS)
    throw invalidRequest(`'tools' accepts at most ${MAX_TOOLS} functions`, 'tools', 'invalid_value');
  const seen = new Set<string>();
  const tools = raw.map((t, i): FunctionTool => {
    const p = `tools[${i}]`;
    if (!isObject(t)) throw invalidRequest(`'${p}' must be an object`, p, 'invalid_type');
    if (t.type !== 'function')
      throw unsupportedParameter(`${p}.type`, `${JSON.stringify(t.type)} is not supported: only 'function' tools`);
    const n = name(t.name, `${p}.name`);
    if (seen.has(n)) throw invalidRequest(`'${p}.name' repeats the function '${n}'`, `${p}.name`, 'invalid_value');
    seen.add(n);
    if (!absent(t.description) && typeof t.description !== 'string')
      throw invalidRequest(`'${p}.description' must be a string`, `${p}.description`, 'invalid_type');
    if (!absent(t.parameters) && !isObject(t.parameters))
      throw invalidRequest(`'${p}.parameters' must be a JSON Schema object`, `${p}.parameters`, 'invalid_type');
    if (!absent(t.strict) && typeof t.strict !== 'boolean')
      throw invalidRequest(`'${p}.strict' must be a boolean`, `${p}.strict`, 'invalid_type');
    return {
      name: n,
      description: typeof t.description === 'string' ? t.description : undefined,
      parameters: isObject(t.parameters) ? t.parameters : { type: 'object', properties: {} },
      // The Responses API's default is strict.
      strict: t.strict !== false,
    };
  });
  return {
    tools,
    echo: tools.map((t) => ({
      type: 'function',
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters,
      strict: t.strict,
    })),
  };
}

function parseToolChoice(raw: unknown, tools: FunctionTool[]): ToolChoice {
  if (absent(raw)) return tools.length > 0 ? 'auto' : 'none';
  let choice: ToolChoice;
  if (raw === 'none' || raw === 'auto' || raw === 'required') choice = raw;
  else if (isObject(raw) && raw.type === 'function') choice = { name: name(raw.name, 'tool_choice.name') };
  else
    throw invalidRequest(
      "'tool_choice' must be 'none', 'auto', 'required' or {\"type\":\"function\",\"name\":...}",
      'tool_choice',
      'invalid_value',
    );
  return checkToolChoice(choice, tools);
}

function parseTextFormat(raw: unknown): { format: ResponseFormat; echo: ResponseEcho['text']['format'] } {
  if (absent(raw)) return { format: { type: 'text' }, echo: { type: 'text' } };
  if (!isObject(raw)) throw invalidRequest("'text' must be an object", 'text', 'invalid_type');
  const f = raw.format;
  if (absent(f)) return { format: { type: 'text' }, echo: { type: 'text' } };
  if (!isObject(f)) throw invalidRequest("'text.format' must be an object", 'text.format', 'invalid_type');
  if (f.type === 'text' || f.type === 'json_object') return { format: { type: f.type }, echo: { type: f.type } };
  if (f.type !== 'json_schema')
    throw invalidRequest(
      "'text.format.type' must be 'text', 'json_object' or 'json_schema'",
      'text.format.type',
      'invalid_value',
    );
  const n = name(f.name, 'text.format.name');
  if (!isObject(f.schema))
    throw requiredFieldError("'text.format.schema' must be a JSON Schema object", 'text.format.schema', f.schema);
  if (!absent(f.strict) && typeof f.strict !== 'boolean')
    throw invalidRequest("'text.format.strict' must be a boolean", 'text.format.strict', 'invalid_type');
  const strict = f.strict === true;
  return {
    format: { type: 'json_schema', name: n, schema: f.schema, strict, schemaParam: 'text.format.schema' },
    echo: {
      type: 'json_schema',
      name: n,
      schema: f.schema,
      strict,
      description: typeof f.description === 'string' ? f.description : null,
    },
  };
}

function parseInclude(raw: unknown): boolean {
  if (absent(raw)) return false;
  if (!Array.isArray(raw)) throw invalidRequest("'include' must be an array", 'include', 'invalid_type');
  for (const [i, v] of raw.entries()) {
    if (v !== 'message.output_text.logprobs')
      throw unsupportedParameter(
        `include[${i}]`,
        `${JSON.stringify(v)} is not supported (only "message.output_text.logprobs")`,
      );
  }
  return raw.length > 0;
}

export function validateResponsesRequest(body: unknown): ResponsesRequest {
  if (!isObject(body)) throw invalidRequest('Request body must be a JSON object', null, 'invalid_type');
  for (const key of Object.keys(body)) {
    if (STATEFUL.includes(key) && !absent(body[key]) && body[key] !== false) {
      throw unsupportedParameter(
        key,
        'is not supported: continue a conversation with `previous_response_id`, or send it whole in `input`',
      );
    }
    if (!HONOURED.has(key) && !HARMLESS.has(key) && !STATEFUL.includes(key))
      throw invalidRequest(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  }
  if (!absent(body.store) && typeof body.store !== 'boolean')
    throw invalidRequest("'store' must be a boolean", 'store', 'invalid_type');
  const previous = body.previous_response_id;
  if (!absent(previous) && (typeof previous !== 'string' || previous === '' || previous.length > MAX_RESPONSE_ID)) {
    throw invalidRequest(
      `'previous_response_id' must be a response id (a string of 1 to ${MAX_RESPONSE_ID} characters)`,
      'previous_response_id',
      'invalid_value',
    );
  }
  if (!absent(body.reasoning) && !isObject(body.reasoning))
    throw invalidRequest("'reasoning' must be an object", 'reasoning', 'invalid_type');
  const reasoning = isObject(body.reasoning) ? body.reasoning : {};
  if (!absent(reasoning.summary))
    throw unsupportedParameter(
      'reasoning.summary',
      'is not supported: the thinking text itself is returned as a reasoning item',
    );
  const reasoningEffort = parseReasoningEffort(reasoning.effort, 'reasoning.effort');
  if (typeof body.model !== 'string' || body.model === '')
    throw requiredFieldError("'model' must be a non-empty string", 'model', body.model);
  if (!absent(body.instructions) && typeof body.instructions !== 'string')
    throw invalidRequest("'instructions' must be a string", 'instructions', 'invalid_type');
  const instructions = typeof body.instructions === 'string' ? body.instructions : undefined;
  if (!absent(body.stream) && typeof body.stream !== 'boolean')
    throw invalidRequest("'stream' must be a boolean", 'stream', 'invalid_type');
  if (!absent(body.parallel_tool_calls) && typeof body.parallel_tool_calls !== 'boolean')
    throw invalidRequest("'parallel_tool_calls' must be a boolean", 'parallel_tool_calls', 'invalid_type');
  if (!absent(body.user) && typeof body.user !== 'string')
    throw invalidRequest("'user' must be a string", 'user', 'invalid_type');
  const metadata = parseMetadata(body.metadata) ?? {};
  checkServiceTier(body.service_tier);

  const input = parseInput(body.input);
  const instructionMessages: ChatMessage[] =
    instructions === undefined ? [] : [{ role: 'system', content: instructions }];
  const messages = [...instructionMessages, ...input.messages];
  const { tools, echo: toolsEcho } = parseTools(body.tools);
  const toolChoice = parseToolChoice(body.tool_choice, tools);
  const text = parseTextFormat(body.text);
  const includeLogprobs = parseInclude(body.include);
  const topLogprobs = number(body, 'top_logprobs', 0, MAX_TOP_LOGPROBS, true);
  const maxTokens = number(body, 'max_output_tokens', 1, Number.MAX_SAFE_INTEGER, true);
  const temperature = number(body, 'temperature', 0, 2);
  const topP = number(body, 'top_p', 0, 1);
  const parallel = body.parallel_tool_calls !== false;
  const chat: ChatRequest = {
    model: body.model,
    messages,
    stream: body.stream === true,
    includeUsage: true,
    tools,
    toolChoice,
    parallelToolCalls: parallel,
    responseFormat: text.format,
    topLogprobs: includeLogprobs || topLogprobs !== undefined ? (topLogprobs ?? 0) : undefined,
    maxTokens,
    temperature,
    topP,
    stop: [],
    user: typeof body.user === 'string' ? body.user : undefined,
    reasoningEffort,
    priority: parseRequestPriority(body.priority),
  };
  const store = body.store !== false;
  const previousResponseId = typeof previous === 'string' ? previous : null;
  return {
    chat,
    instructionMessages,
    inputMessages: input.messages,
    inputItems: input.items,
    store,
    previousResponseId,
    includeLogprobs,
    echo: {
      instructions: instructions ?? null,
      max_output_tokens: maxTokens ?? null,
      metadata,
      parallel_tool_calls: parallel,
      temperature: temperature ?? null,
      top_p: topP ?? null,
      top_logprobs: topLogprobs ?? null,
      tool_choice: typeof toolChoice === 'object' ? { type: 'function', name: toolChoice.name } : toolChoice,
      tools: toolsEcho,
      text: { format: text.echo },
      user: typeof body.user === 'string' ? body.user : null,
      store,
      previous_response_id: previousResponseId,
    },
  };
}
