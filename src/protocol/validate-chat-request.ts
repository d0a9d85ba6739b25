import { parseRequestPriority } from './priority.ts';
import { parseReasoningEffort } from './chat-request.ts';
import { echoed, invalidRequest, unsupportedParameter } from '../errors/index.ts';
import type { ChatMessage, ChatRequest, ChatRole } from './chat-request.ts';
import {
  parseLogprobs,
  parseMessageToolCalls,
  parseResponseFormat,
  parseSamplerExtensions,
  parseToolCallId,
  parseToolChoice,
  parseTools,
} from './validate-chat-features.ts';
import {
  absent,
  checkServiceTier,
  isObject,
  type Json,
  optionalBoolean,
  optionalNumber,
  parseIncludeUsage,
  parseMetadata,
} from './json-fields.ts';

/** Limits applied while validating; the gateway passes the configured values. */
export interface ChatRequestLimits {
  /** Defaults to 2048. */
  maxMessages: number;
  /** Defaults to 4. */
  maxStopSequences: number;
}

export const DEFAULT_CHAT_REQUEST_LIMITS = {
  maxMessages: 2048,
  maxStopSequences: 4,
} satisfies Required<ChatRequestLimits>;

/** Fields that are accepted and have no effect on generation (documented in the README). */
const HARMLESS_FIELDS = new Set(['store', 'metadata', 'service_tier', 'user', 'stream_options']);
const HONOURED_FIELDS = new Set([
  'model',
  'messages',
  'stream',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  // Tools, structured outputs, logprobs (validate-chat-features.ts).
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'logprobs',
  'top_logprobs',
  // llama-server / vLLM sampler extensions (README "Request fields").
  'top_k',
  'min_p',
  'repetition_penalty',
  // A thinking model's switch (honoured by the gateway where the template has one).
  'reasoning_effort',
  // Scheduling: a request may lower its key's priority (protocol/priority.ts).
  'priority',
]);

/** A Map, not an object literal: a client's role must never find an Object.prototype member ('constructor'). */
const ROLE_MAP: ReadonlyMap<string, ChatRole> = new Map([
  ['system', 'system'],
  ['developer', 'system'],
  ['user', 'user'],
  ['assistant', 'assistant'],
  ['tool', 'tool'],
]);

/**
 * `max_tokens` and its alias `max_completion_tokens` are one limit. Each one given is validated; when both
 * are given `max_tokens` wins (documented in the README).
 */
function parseMaxTokens(body: Json): number | undefined {
  const legacy = optionalNumber(body, 'max_tokens', 1, Number.MAX_SAFE_INTEGER, true);
  const alias = optionalNumber(body, 'max_completion_tokens', 1, Number.MAX_SAFE_INTEGER, true);
  return legacy ?? alias;
}

/** Rejects parameters Hearth cannot honour: never silently dropped (contract.md). */
function rejectUnsupported(body: Json): void {
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    throw unsupportedParameter('n', 'must be 1: only one choice per request is supported');
  if (body.functions !== undefined && body.functions !== null) throw unsupportedParameter('functions');
  if (body.function_call !== undefined && body.function_call !== null) throw unsupportedParameter('function_call');
  if (
    body.logit_bias !== undefined &&
    body.logit_bias !== null &&
    !(isObject(body.logit_bias) && Object.keys(body.logit_bias).length === 0)
  )
    throw unsupportedParameter('logit_bias');
  for (const key of Object.keys(body)) {
    if (HONOURED_FIELDS.has(key) || HARMLESS_FIELDS.has(key)) continue;
    if (['n', 'functions', 'function_call', 'logit_bias'].includes(key)) continue;
    throw invalidRequest(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  }
}

function messageContent(raw: unknown, index: number): string {
  const param = `messages[${index}].content`;
  if (typeof raw === 'string') return raw;
  if (Array.isArray(raw)) {
    let text = '';
    raw.forEach((part, j) => {
      if (!isObject(part) || part.type !== 'text') {
        const type = isObject(part) && typeof part.type === 'string' ? part.type : typeof part;
        throw invalidRequest(
          `${param}[${j}] must be a text part ({"type":"text","text":...}); '${type}' parts are not supported`,
          `${param}[${j}]`,
          'unsupported_content_part',
        );
      }
      if (typeof part.text !== 'string')
        throw part.text === undefined
          ? invalidRequest(
              `${param}[${j}].text is required in a text part`,
              `${param}[${j}].text`,
              'missing_required_parameter',
            )
          : invalidRequest(`${param}[${j}].text must be a string`, `${param}[${j}].text`, 'invalid_type');
      text += part.text;
    });
    return text;
  }
  throw invalidRequest(`'${param}' must be a string or an array of text parts`, param, 'invalid_type');
}

/** A short description of a client value for an error message; never walks into it (its depth is the client's). */
function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(echoed(v));
  if (Array.isArray(v)) return 'an array';
  if (v === null || typeof v !== 'object') return String(v);
  return 'an object';
}

function parseMessages(raw: unknown, limits: ChatRequestLimits): ChatMessage[] {
  if (raw === undefined) throw invalidRequest("'messages' is required", 'messages', 'missing_required_parameter');
  if (!Array.isArray(raw)) throw invalidRequest("'messages' must be an array", 'messages', 'invalid_type');
  if (raw.length === 0) throw invalidRequest("'messages' must contain at least one message", 'messages', 'empty_array');
  if (raw.length > limits.maxMessages)
    throw invalidRequest(
      `'messages' has ${raw.length} messages; the limit is ${limits.maxMessages}`,
      'messages',
      'too_many_messages',
    );
  return raw.map((m, i) => {
    if (!isObject(m)) throw invalidRequest(`'messages[${i}]' must be an object`, `messages[${i}]`, 'invalid_type');
    const role = typeof m.role === 'string' ? ROLE_MAP.get(m.role) : undefined;
    if (role === undefined) {
      throw invalidRequest(
        `'messages[${i}].role' must be one of system, developer, user, assistant, tool; got ${describeValue(m.role)}`,
        `messages[${i}].role`,
        'invalid_value',
      );
    }
    if (m.function_call !== undefined && m.function_call !== null)
      throw unsupportedParameter(`messages[${i}].function_call`, 'is not supported (use tool_calls)');
    if (!absent(m.name) && typeof m.name !== 'string')
      throw invalidRequest(`'messages[${i}].name' must be a string`, `messages[${i}].name`, 'invalid_type');
    if (m.tool_calls !== undefined && m.tool_calls !== null && role !== 'assistant')
      throw invalidRequest(
        `'messages[${i}].tool_calls' is only allowed on assistant messages`,
        `messages[${i}].tool_calls`,
        'invalid_value',
      );
    const toolCalls =
      role === 'assistant' ? parseMessageToolCalls(m.tool_calls, `messages[${i}].tool_calls`) : undefined;
    const contentOptional = toolCalls !== undefined && toolCalls.length > 0;
    if ((m.content === undefined || m.content === null) && !contentOptional)
      throw invalidRequest(
        `'messages[${i}].content' is required`,
        `messages[${i}].content`,
        'missing_required_parameter',
      );
    const message: ChatMessage = {
      role,
      content: m.content === undefined || m.content === null ? '' : messageContent(m.content, i),
    };
    if (toolCalls !== undefined && toolCalls.length > 0) message.toolCalls = toolCalls;
    if (role === 'tool') message.toolCallId = parseToolCallId(m.tool_call_id, `messages[${i}].tool_call_id`);
    return message;
  });
}

function parseStop(raw: unknown, limits: ChatRequestLimits): string[] {
  if (raw === undefined || raw === null) return [];
  const list = typeof raw === 'string' ? [raw] : raw;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string'))
    throw invalidRequest("'stop' must be a string or an array of strings", 'stop', 'invalid_type');
  if (list.length > limits.maxStopSequences)
    throw invalidRequest(`'stop' accepts at most ${limits.maxStopSequences} sequences`, 'stop', 'invalid_value');
  if (list.some((s) => s.length === 0))
    throw invalidRequest("'stop' sequences must not be empty", 'stop', 'invalid_value');
  return list as string[];
}

/**
 * Turns a parsed JSON body into a ChatRequest, or throws an ApiError (400) that names the field.
 * Pure: no I/O, no model knowledge (context length is checked next to the model).
 */
export function validateChatRequest(
  body: unknown,
  limits: ChatRequestLimits = DEFAULT_CHAT_REQUEST_LIMITS,
): ChatRequest {
  if (!isObject(body)) throw invalidRequest('Request body must be a JSON object', null, 'invalid_type');
  rejectUnsupported(body);
  if (body.model === undefined) throw invalidRequest("'model' is required", 'model', 'missing_required_parameter');
  if (typeof body.model !== 'string' || body.model.length === 0)
    throw invalidRequest("'model' must be a non-empty string", 'model', 'invalid_type');
  const messages = parseMessages(body.messages, limits);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw invalidRequest("'stream' must be a boolean", 'stream', 'invalid_type');
  const stream = body.stream === true;
  const includeUsage = parseIncludeUsage(body, stream);
  const maxTokens = parseMaxTokens(body);
  if (body.user !== undefined && body.user !== null && typeof body.user !== 'string')
    throw invalidRequest("'user' must be a string", 'user', 'invalid_type');
  // Accepted without effect, still checked: a client's typo is a 400, not silence.
  optionalBoolean(body, 'store');
  parseMetadata(body.metadata);
  checkServiceTier(body.service_tier);
  const tools = parseTools(body.tools);
  const parallel = body.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean')
    throw invalidRequest("'parallel_tool_calls' must be a boolean", 'parallel_tool_calls', 'invalid_type');
  return {
    tools,
    toolChoice: parseToolChoice(body.tool_choice, tools),
    parallelToolCalls: parallel !== false,
    responseFormat: parseResponseFormat(body.response_format),
    topLogprobs: parseLogprobs(body),
    ...parseSamplerExtensions(body),
    model: body.model,
    messages,
    stream,
    includeUsage,
    temperature: optionalNumber(body, 'temperature', 0, 2),
    topP: optionalNumber(body, 'top_p', 0, 1),
    maxTokens,
    stop: parseStop(body.stop, limits),
    seed: optionalNumber(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true),
    presencePenalty: optionalNumber(body, 'presence_penalty', -2, 2),
    frequencyPenalty: optionalNumber(body, 'frequency_penalty', -2, 2),
    user: typeof body.user === 'string' ? body.user : undefined,
    reasoningEffort: parseReasoningEffort(body.reasoning_effort, 'reasoning_effort'),
    priority: parseRequestPriority(body.priority),
  };
}
