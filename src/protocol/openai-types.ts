/**
 * OpenAI chat-completions wire types, as the official `openai` SDK parses them.
 * Only what Hearth emits or accepts is typed here.
 */
export type FinishReason = 'stop' | 'length';

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
    message: { role: 'assistant'; content: string; refusal: null };
    logprobs: null;
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
    delta: { role?: 'assistant'; content?: string };
    logprobs: null;
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
