/** The validated, internal form of a chat-completions request. Produced once, at the edge. */
export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

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
}

export interface ChatRequest extends SamplingOptions {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  /** stream_options.include_usage */
  includeUsage: boolean;
  user?: string | undefined;
}
