import { invalidRequest } from '../errors/index.ts';
/** The validated, internal form of a chat-completions request. Produced once, at the edge. */
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** A function call the assistant made (OpenAI `tool_calls[i]` with `type: "function"`). */
export interface ToolCall {
  /** `call_...` as the model or Hearth named it; echoed back by the client in the `tool` message. */
  id: string;
  name: string;
  /** The arguments as JSON text (exactly what OpenAI's `function.arguments` carries). */
  arguments: string;
}

export interface ChatMessage {
  role: ChatRole;
  /** Text content ('' for an assistant message that only calls tools). */
  content: string;
  /** role 'assistant' only: the calls it made. */
  toolCalls?: ToolCall[] | undefined;
  /** role 'tool' only: the id of the call this message answers. */
  toolCallId?: string | undefined;
}

/** A prompt sent without a chat template (legacy completions): text, or token ids (checked against the vocabulary in the worker). */
export type RawPrompt = string | readonly number[];

/** A JSON Schema object as the client sent it (validated as JSON, interpreted by the grammar converter). */
export type JsonSchema = { [key: string]: unknown };

/** One declared function (OpenAI `tools[i]` with `type: "function"`). */
export interface FunctionTool {
  name: string;
  description?: string | undefined;
  /** JSON Schema of the arguments object; `{"type":"object","properties":{}}` when the client sent none. */
  parameters: JsonSchema;
  strict: boolean;
}

/** OpenAI `tool_choice`; a named function forces exactly that call. */
export type ToolChoice = 'none' | 'auto' | 'required' | { name: string };

/**
 * OpenAI `response_format` (or the Responses API's `text.format`). `schemaParam` is the request field the schema
 * came in, as the caller's API names it (`response_format.json_schema.schema` / `text.format.schema`): an error
 * about the schema names that field.
 */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: JsonSchema; strict: boolean; schemaParam: string };

export interface SamplingOptions {
  /** 0..2; undefined means "the model's / project's default". */
  temperature?: number | undefined;
  /** (0..1] */
  topP?: number | undefined;
  /** >= 1; undefined means "until the context is full or the server cap". */
  maxTokens?: number | undefined;
  /** Up to 4 non-empty strings; generation stops before any of them. */
  stop: string[];
  seed?: number | undefined;
  /** -2..2 */
  presencePenalty?: number | undefined;
  /** -2..2 */
  frequencyPenalty?: number | undefined;
  /** llama-server extension: >= 0 (0 = off). */
  topK?: number | undefined;
  /** llama-server extension: 0..1. */
  minP?: number | undefined;
  /** llama-server / vLLM extension (`repetition_penalty`): > 0, 1 = off. */
  repetitionPenalty?: number | undefined;
}

/** A request's sampling fields, and only those (what the shared model's engine is asked to honour). */
export function samplingOptionsOf(o: SamplingOptions): SamplingOptions {
  return {
    maxTokens: o.maxTokens,
    stop: o.stop,
    temperature: o.temperature,
    topP: o.topP,
    seed: o.seed,
    presencePenalty: o.presencePenalty,
    frequencyPenalty: o.frequencyPenalty,
    topK: o.topK,
    minP: o.minP,
    repetitionPenalty: o.repetitionPenalty,
  };
}

/** The fields of a request that asks for no tools, no structured output and no logprobs (a fresh object). */
export function plainChatFields(): Pick<ChatRequest, 'tools' | 'toolChoice' | 'parallelToolCalls' | 'responseFormat'> {
  return { tools: [], toolChoice: 'none', parallelToolCalls: true, responseFormat: { type: 'text' } };
}

export interface ChatRequest extends SamplingOptions {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  /** stream_options.include_usage */
  includeUsage: boolean;
  user?: string | undefined;
  /** Declared functions ([] when none). */
  tools: FunctionTool[];
  /** 'none' when no tools; OpenAI's default 'auto' when tools are given without a choice. */
  toolChoice: ToolChoice;
  /** OpenAI default true. */
  parallelToolCalls: boolean;
  /** { type: 'text' } when absent. */
  responseFormat: ResponseFormat;
  /** undefined: no logprobs; n (0..20): each token's logprob with its n most likely alternatives. */
  topLogprobs?: number | undefined;
  /** `reasoning_effort` (Responses: `reasoning.effort`); honoured only where the template can switch thinking off. */
  reasoningEffort?: ReasoningEffort | undefined;
  /** `priority: "batch"`: run below the key's priority (protocol/priority.ts); undefined = the key's. */
  priority?: 'batch' | undefined;
}

/** OpenAI's reasoning efforts: `none` and `minimal` switch a thinking model's thinking off, the others leave it on. */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/** `reasoning_effort` (or `reasoning.effort`) validated: undefined when absent. */
export function parseReasoningEffort(value: unknown, param: string): ReasoningEffort | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !(REASONING_EFFORTS as readonly string[]).includes(value)) {
    throw invalidRequest(`'${param}' must be one of ${REASONING_EFFORTS.join(', ')}`, param, 'invalid_value');
  }
  return value as ReasoningEffort;
}
