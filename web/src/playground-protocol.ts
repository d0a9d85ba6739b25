import type { ApiErrorBody } from './api.ts';

/**
 * The two APIs the playground speaks to the shared model: OpenAI chat completions and Anthropic Messages,
 * streamed. One request builder and one event reader each, so the page handles a reply the same way
 * whichever API produced it. Pure.
 */
export type PlaygroundApi = 'chat' | 'messages';

export interface PlaygroundInput {
  model: string;
  system: string;
  prompt: string;
  /** Empty: the API's default (Messages requires one: 64). */
  maxTokens: string;
  temperature: string;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What one stream event adds to the reply. */
export interface StreamPiece {
  text?: string;
  reasoning?: string;
  finishReason?: string;
  usage?: Usage;
  error?: ApiErrorBody;
}

export const API_PATHS: Record<PlaygroundApi, string> = {
  chat: '/api/inference/v1/chat/completions',
  messages: '/api/inference/v1/messages',
};

/** The streaming request body of `api` for what the form holds. */
export function requestBody(api: PlaygroundApi, f: PlaygroundInput): Record<string, unknown> {
  const sampling = f.temperature.trim() ? { temperature: Number(f.temperature) } : {};
  if (api === 'messages') {
    return {
      model: f.model.trim(),
      max_tokens: f.maxTokens.trim() ? Number(f.maxTokens) : 64,
      ...(f.system.trim() ? { system: f.system } : {}),
      messages: [{ role: 'user', content: f.prompt }],
      stream: true,
      ...sampling,
    };
  }
  const messages = [
    ...(f.system.trim() ? [{ role: 'system', content: f.system }] : []),
    { role: 'user', content: f.prompt },
  ];
  return {
    model: f.model.trim(),
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...(f.maxTokens.trim() ? { max_tokens: Number(f.maxTokens) } : {}),
    ...sampling,
  };
}

/** Reads one event's JSON (`data:` of the SSE event) of `api`'s stream. */
export function readPiece(api: PlaygroundApi, data: string): StreamPiece {
  return api === 'messages'
    ? messagesPiece(JSON.parse(data) as MessagesEvent)
    : chatPiece(JSON.parse(data) as ChatChunk);
}

interface ChatChunk {
  error?: ApiErrorBody;
  choices?: Array<{
    delta?: { content?: string | null; reasoning_content?: string | null };
    finish_reason?: string | null;
  }>;
  usage?: Usage | null;
}

function chatPiece(chunk: ChatChunk): StreamPiece {
  if (chunk.error) return { error: chunk.error };
  const choice = chunk.choices?.[0];
  const piece: StreamPiece = {};
  if (choice?.delta?.content) piece.text = choice.delta.content;
  if (choice?.delta?.reasoning_content) piece.reasoning = choice.delta.reasoning_content;
  if (choice?.finish_reason) piece.finishReason = choice.finish_reason;
  if (chunk.usage) piece.usage = chunk.usage;
  return piece;
}

interface MessagesEvent {
  type: string;
  delta?: { type?: string; text?: string; thinking?: string; stop_reason?: string | null };
  usage?: { input_tokens?: number; output_tokens?: number };
  error?: { type: string; message: string };
}

function messagesPiece(e: MessagesEvent): StreamPiece {
  switch (e.type) {
    case 'content_block_delta':
      if (e.delta?.type === 'text_delta' && e.delta.text) return { text: e.delta.text };
      if (e.delta?.type === 'thinking_delta' && e.delta.thinking) return { reasoning: e.delta.thinking };
      return {};
    case 'message_delta': {
      const input = e.usage?.input_tokens ?? 0;
      const output = e.usage?.output_tokens ?? 0;
      return {
        ...(e.delta?.stop_reason ? { finishReason: e.delta.stop_reason } : {}),
        usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
      };
    }
    case 'error':
      return {
        error: { message: e.error?.message ?? 'error', type: e.error?.type ?? 'api_error', param: null, code: null },
      };
    default:
      return {};
  }
}
