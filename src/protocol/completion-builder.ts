import type { ChatCompletion, ChatCompletionChunk, FinishReason, Usage } from './openai-types.ts';
import { newCompletionId, unixSeconds } from './ids.ts';

/**
 * Builds every object of one completion (JSON body or stream chunks) with a shared id, created time
 * and model. Content chunks are the hot path of streaming: their SSE text is assembled from a
 * pre-rendered prefix and suffix so only the token text is JSON-escaped per event.
 */
export class CompletionBuilder {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  private readonly contentPrefix: string;
  private static readonly CONTENT_SUFFIX = '},"logprobs":null,"finish_reason":null}]}\n\n';

  constructor(model: string, id = newCompletionId(), created = unixSeconds()) {
    this.id = id;
    this.created = created;
    this.model = model;
    this.contentPrefix =
      `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},` +
      `"model":${JSON.stringify(model)},"system_fingerprint":null,"choices":[{"index":0,"delta":{"content":`;
  }

  chunk(delta: ChatCompletionChunk['choices'][number]['delta'], finishReason: FinishReason | null): ChatCompletionChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
  }

  /** First chunk of a stream: carries the assistant role (contract.md). */
  roleChunk(): ChatCompletionChunk {
    return this.chunk({ role: 'assistant', content: '' }, null);
  }

  /** SSE event text for one content delta; equal to sseData(this.chunk({content}, null)). */
  contentEvent(text: string): string {
    return this.contentPrefix + JSON.stringify(text) + CompletionBuilder.CONTENT_SUFFIX;
  }

  finishChunk(reason: FinishReason): ChatCompletionChunk {
    return this.chunk({}, reason);
  }

  usageChunk(usage: Usage): ChatCompletionChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      system_fingerprint: null,
      choices: [],
      usage,
    };
  }

  completion(content: string, finishReason: FinishReason, usage: Usage): ChatCompletion {
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      system_fingerprint: null,
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: finishReason }],
      usage,
    };
  }
}

export function makeUsage(promptTokens: number, completionTokens: number, cachedTokens?: number): Usage {
  const usage: Usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  if (cachedTokens !== undefined) usage.prompt_tokens_details = { cached_tokens: cachedTokens };
  return usage;
}
