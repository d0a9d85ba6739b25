/**
 * OpenAI chat-completions wire types, as the official `openai` SDK parses them.
 * Only what Hearth emits or accepts is typed here.
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** One token's log-probability (`choices[i].logprobs.content[j]`). */
export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] | null }>;
}

/** `choices[i].logprobs` when the request asked for logprobs. */
export interface ChatLogprobs {
  content: ChatTokenLogprob[] | null;
  refusal: null;
}

/** A whole function call in `message.tool_calls`. */
export interface ChatToolCallObject {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * A streamed fragment of a call in `delta.tool_calls`: the first fragment of a call carries index, id,
 * type and function.name (and '' or initial arguments); later fragments only index + function.arguments.
 */
export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: string | null;
  choices: Array<{
    index: number;
    /** content is null when the answer is only tool calls. */
    message: {
      role: 'assistant';
      content: string | null;
      refusal: null;
      reasoning_content?: string;
      tool_calls?: ChatToolCallObject[];
    };
    logprobs: ChatLogprobs | null;
    finish_reason: FinishReason;
  }>;
  usage: Usage;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  system_fingerprint: string | null;
  choices: Array<{
    index: number;
    delta: { role?: 'assistant'; content?: string; reasoning_content?: string; tool_calls?: ChatToolCallDelta[] };
    logprobs: ChatLogprobs | null;
    finish_reason: FinishReason | null;
  }>;
  usage?: Usage | null;
}

export interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  [extra: string]: unknown;
}

export interface ModelList {
  object: 'list';
  data: ModelObject[];
}
