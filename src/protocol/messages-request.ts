import { parseRequestPriority } from './priority.ts';
import { invalidRequest, unsupportedParameter } from '../errors/index.ts';
import type { ChatMessage, ChatRequest, FunctionTool, ToolCall, ToolChoice } from './chat-request.ts';
import { checkToolChoice, functionName, MAX_TOOLS } from './validate-chat-features.ts';
import { absent, isObject, type Json, requiredFieldError } from './json-fields.ts';

/**
 * The Anthropic Messages API request (`POST /messages`, and `/messages/count_tokens` without `max_tokens`),
 * validated once at the edge and turned into the ChatRequest the shared model answers: `system` becomes a
 * system message, text blocks text, `tool_use` blocks an assistant's tool calls, `tool_result` blocks `tool`
 * messages. Pure; every refusal is a 400 naming the field (rendered in Anthropic's error shape by the route).
 * Accepted without effect: `metadata`, `service_tier`, `cache_control` (top level, on blocks and tools), `thinking` /
 * `redacted_thinking` blocks in the history (the model's own earlier reasoning; templates drop it), and
 * `thinking: {type: "disabled"}`.
 */
export interface MessagesRequest {
  chat: ChatRequest;
}

const HONOURED = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'stream',
  'tools',
  'tool_choice',
  'priority',
]);
const HARMLESS = new Set(['metadata', 'service_tier', 'thinking', 'cache_control']);
/** count_tokens takes the request without the generation settings. */
const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'cache_control']);
const MAX_MESSAGES = 2048;
const MAX_STOP_SEQUENCES = 4;

function number(body: Json, field: string, min: number, max: number, integer = false): number | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)))
    throw invalidRequest(`${field}: must be ${integer ? 'an integer' : 'a number'}`, field, 'invalid_type');
  if (v < min || v > max)
    throw invalidRequest(`${field}: must be between ${min} and ${max}, got ${v}`, field, 'invalid_value');
  return v;
}

/** `v` when it is a non-empty string; a 400 naming `param` otherwise. */
function nonEmptyString(v: unknown, param: string): string {
  if (typeof v !== 'string' || v === '')
    throw invalidRequest(`${param}: must be a non-empty string`, param, 'invalid_type');
  return v;
}

function typeOf(block: unknown): string {
  return isObject(block) && typeof block.type === 'string' ? block.type : typeof block;
}

/** `system`: a string or an array of text blocks. */
function systemText(raw: unknown): string | undefined {
  if (absent(raw)) return undefined;
  if (typeof raw === 'string') return raw;
  if (!Array.isArray(raw))
    throw invalidRequest('system: must be a string or an array of text blocks', 'system', 'invalid_type');
  return raw.map((b, i) => textOf(b, `system[${i}]`)).join('\n');
}

function textOf(block: unknown, param: string): string {
  if (!isObject(block) || block.type !== 'text')
    throw invalidRequest(
      `${param}: must be a text block ({"type":"text","text":...}); '${typeOf(block)}' blocks are not supported here`,
      param,
      'unsupported_content_block',
    );
  if (typeof block.text !== 'string')
    throw invalidRequest(`${param}.text: must be a string`, `${param}.text`, 'invalid_type');
  return block.text;
}

/** A tool_result's `content`: a string or text blocks (absent: empty). */
function toolResultText(raw: unknown, param: string): string {
  if (absent(raw)) return '';
  if (typeof raw === 'string') return raw;
  if (!Array.isArray(raw))
    throw invalidRequest(`${param}: must be a string or an array of text blocks`, param, 'invalid_type');
  return raw.map((b, i) => textOf(b, `${param}[${i}]`)).join('');
}

/** One Anthropic message -> chat messages (a user turn with tool results becomes `tool` messages, then its text). */
function convertMessage(m: unknown, i: number, out: ChatMessage[]): void {
  const p = `messages[${i}]`;
  if (!isObject(m)) throw invalidRequest(`${p}: must be an object`, p, 'invalid_type');
  if (m.role !== 'user' && m.role !== 'assistant')
    throw invalidRequest(`${p}.role: must be 'user' or 'assistant'`, `${p}.role`, 'invalid_value');
  const role = m.role;
  const content = m.content;
  if (typeof content === 'string') {
    out.push({ role, content });
    return;
  }
  if (absent(content)) throw invalidRequest(`${p}.content: is required`, `${p}.content`, 'missing_required_parameter');
  if (!Array.isArray(content))
    throw invalidRequest(
      `${p}.content: must be a string or an array of content blocks`,
      `${p}.content`,
      'invalid_type',
    );
  let text = '';
  const calls: ToolCall[] = [];
  content.forEach((block, j) => {
    const bp = `${p}.content[${j}]`;
    const type = typeOf(block);
    if (!isObject(block)) throw invalidRequest(`${bp}: must be a content block object`, bp, 'invalid_type');
    switch (type) {
      case 'text':
        text += textOf(block, bp);
        return;
      case 'tool_use': {
        if (role !== 'assistant')
          throw invalidRequest(`${bp}: tool_use blocks belong in assistant messages`, bp, 'invalid_value');
        const id = nonEmptyString(block.id, `${bp}.id`);
        const name = functionName(block.name, `${bp}.name`);
        if (!isObject(block.input))
          throw invalidRequest(`${bp}.input: must be an object`, `${bp}.input`, 'invalid_type');
        calls.push({ id, name, arguments: JSON.stringify(block.input) });
        return;
      }
      case 'tool_result': {
        if (role !== 'user')
          throw invalidRequest(`${bp}: tool_result blocks belong in user messages`, bp, 'invalid_value');
        const toolCallId = nonEmptyString(block.tool_use_id, `${bp}.tool_use_id`);
        if (!absent(block.is_error) && typeof block.is_error !== 'boolean')
          throw invalidRequest(`${bp}.is_error: must be a boolean`, `${bp}.is_error`, 'invalid_type');
        const result = toolResultText(block.content, `${bp}.content`);
        out.push({
          role: 'tool',
          content: block.is_error === true ? `Error: ${result}` : result,
          toolCallId,
        });
        return;
      }
      case 'thinking':
      case 'redacted_thinking':
        if (role !== 'assistant')
          throw invalidRequest(`${bp}: ${type} blocks belong in assistant messages`, bp, 'invalid_value');
        return;
      default:
        throw invalidRequest(
          `${bp}: '${type}' blocks are not supported (text, tool_use and tool_result are)`,
          bp,
          'unsupported_content_block',
        );
    }
  });
  if (role === 'assistant') {
    const message: ChatMessage = { role, content: text };
    if (calls.length > 0) message.toolCalls = calls;
    out.push(message);
  } else if (text !== '' || out.at(-1)?.role !== 'tool') {
    out.push({ role, content: text });
  }
}

function parseMessages(raw: unknown): ChatMessage[] {
  if (raw === undefined) throw invalidRequest('messages: Field required', 'messages', 'missing_required_parameter');
  if (!Array.isArray(raw)) throw invalidRequest('messages: must be an array', 'messages', 'invalid_type');
  if (raw.length === 0) throw invalidRequest('messages: at least one message is required', 'messages', 'empty_array');
  if (raw.length > MAX_MESSAGES)
    throw invalidRequest(
      `messages: ${raw.length} messages; the limit is ${MAX_MESSAGES}`,
      'messages',
      'too_many_messages',
    );
  const out: ChatMessage[] = [];
  raw.forEach((m, i) => convertMessage(m, i, out));
  const last = raw.length - 1;
  if (isObject(raw[last]) && raw[last].role === 'assistant') {
    throw unsupportedParameter(
      `messages[${last}]`,
      'is an assistant message: continuing a prefilled assistant turn is not supported (end with a user message)',
    );
  }
  return out;
}

/** `tools`: custom tools {name, description, input_schema}; server tools (a `type` other than custom) are refused. */
function parseTools(raw: unknown): FunctionTool[] {
  if (absent(raw)) return [];
  if (!Array.isArray(raw)) throw invalidRequest('tools: must be an array', 'tools', 'invalid_type');
  if (raw.length > MAX_TOOLS) throw invalidRequest(`tools: at most ${MAX_TOOLS} tools`, 'tools', 'invalid_value');
  const seen = new Set<string>();
  return raw.map((t, i) => {
    const p = `tools[${i}]`;
    if (!isObject(t)) throw invalidRequest(`${p}: must be an object`, p, 'invalid_type');
    if (!absent(t.type) && t.type !== 'custom')
      throw unsupportedParameter(
        `${p}.type`,
        `'${String(t.type)}' is not supported: only custom tools (name, description, input_schema)`,
      );
    const name = functionName(t.name, `${p}.name`);
    if (seen.has(name)) throw invalidRequest(`${p}.name: repeats the tool '${name}'`, `${p}.name`, 'invalid_value');
    seen.add(name);
    if (!absent(t.description) && typeof t.description !== 'string')
      throw invalidRequest(`${p}.description: must be a string`, `${p}.description`, 'invalid_type');
    if (!isObject(t.input_schema))
      throw requiredFieldError(`${p}.input_schema: must be a JSON Schema object`, `${p}.input_schema`, t.input_schema);
    return {
      name,
      description: typeof t.description === 'string' ? t.description : undefined,
      parameters: t.input_schema,
      strict: false,
    };
  });
}

/** `tool_choice` {type: auto | any | tool | none, name, disable_parallel_tool_use} -> chat's choice and parallelism. */
function parseToolChoice(raw: unknown, tools: FunctionTool[]): { choice: ToolChoice; parallel: boolean } {
  if (absent(raw)) return { choice: tools.length > 0 ? 'auto' : 'none', parallel: true };
  if (!isObject(raw)) throw invalidRequest('tool_choice: must be an object', 'tool_choice', 'invalid_type');
  const dp = raw.disable_parallel_tool_use;
  if (!absent(dp) && typeof dp !== 'boolean')
    throw invalidRequest(
      'tool_choice.disable_parallel_tool_use: must be a boolean',
      'tool_choice.disable_parallel_tool_use',
      'invalid_type',
    );
  const parallel = dp !== true;
  let choice: ToolChoice;
  switch (raw.type) {
    case 'auto':
      choice = 'auto';
      break;
    case 'any':
      choice = 'required';
      break;
    case 'none':
      choice = 'none';
      break;
    case 'tool':
      choice = { name: functionName(raw.name, 'tool_choice.name') };
      break;
    default:
      throw invalidRequest(
        "tool_choice.type: must be one of 'auto', 'any', 'tool', 'none'",
        'tool_choice.type',
        'invalid_value',
      );
  }
  if (choice !== 'none' && tools.length === 0)
    throw invalidRequest('tool_choice: requires tools', 'tool_choice', 'invalid_value');
  return { choice: choice === 'none' ? choice : checkToolChoice(choice, tools), parallel };
}

function parseStopSequences(raw: unknown): string[] {
  if (absent(raw)) return [];
  if (!Array.isArray(raw) || raw.some((s) => typeof s !== 'string'))
    throw invalidRequest('stop_sequences: must be an array of strings', 'stop_sequences', 'invalid_type');
  if (raw.length > MAX_STOP_SEQUENCES)
    throw invalidRequest(`stop_sequences: at most ${MAX_STOP_SEQUENCES} sequences`, 'stop_sequences', 'invalid_value');
  if (raw.some((s) => s === ''))
    throw invalidRequest('stop_sequences: sequences must not be empty', 'stop_sequences', 'invalid_value');
  return raw as string[];
}

function checkFields(body: Json, countOnly: boolean): void {
  for (const key of Object.keys(body)) {
    const known = countOnly ? COUNT_FIELDS.has(key) : HONOURED.has(key) || HARMLESS.has(key);
    if (!known) throw invalidRequest(`${key}: Extra inputs are not permitted`, key, 'unknown_parameter');
  }
  const thinking = body.thinking;
  if (!absent(thinking) && !(isObject(thinking) && thinking.type === 'disabled'))
    throw unsupportedParameter('thinking', 'is not supported (only {"type":"disabled"})');
  if (!absent(body.metadata) && !isObject(body.metadata))
    throw invalidRequest('metadata: must be an object', 'metadata', 'invalid_type');
}

/**
 * A parsed JSON body -> the chat request it asks for, or a 400 naming the field. `countOnly` (count_tokens):
 * only the prompt's fields are accepted and `max_tokens` is not required.
 */
export function validateMessagesRequest(body: unknown, countOnly = false): MessagesRequest {
  if (!isObject(body)) throw invalidRequest('The request body must be a JSON object', null, 'invalid_type');
  checkFields(body, countOnly);
  if (body.model === undefined) throw invalidRequest('model: Field required', 'model', 'missing_required_parameter');
  const model = nonEmptyString(body.model, 'model');
  let maxTokens: number | undefined;
  if (!countOnly) {
    if (absent(body.max_tokens))
      throw invalidRequest('max_tokens: Field required', 'max_tokens', 'missing_required_parameter');
    maxTokens = number(body, 'max_tokens', 1, Number.MAX_SAFE_INTEGER, true);
  }
  const messages = parseMessages(body.messages);
  const system = systemText(body.system);
  if (system !== undefined && system !== '') messages.unshift({ role: 'system', content: system });
  if (!absent(body.stream) && typeof body.stream !== 'boolean')
    throw invalidRequest('stream: must be a boolean', 'stream', 'invalid_type');
  const tools = parseTools(body.tools);
  const { choice, parallel } = parseToolChoice(body.tool_choice, tools);
  return {
    chat: {
      model,
      messages,
      stream: body.stream === true,
      includeUsage: false,
      tools,
      toolChoice: choice,
      parallelToolCalls: parallel,
      responseFormat: { type: 'text' },
      maxTokens,
      stop: parseStopSequences(body.stop_sequences),
      temperature: number(body, 'temperature', 0, 1),
      topP: number(body, 'top_p', 0, 1),
      topK: number(body, 'top_k', 0, 100_000, true),
      priority: parseRequestPriority(body.priority),
    },
  };
}
