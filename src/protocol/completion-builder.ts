import type { ChatDelta, ChatUsage, TokenLogprob } from './chat-delta.ts';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatLogprobs,
  ChatTokenLogprob,
  ChatToolCallDelta,
  ChatToolCallObject,
  FinishReason,
  Usage,
} from './openai-types.ts';
import { newCompletionId, unixSeconds } from './ids.ts';
import { SSE_DONE, sseData } from './sse.ts';

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

  chunk(
    delta: ChatCompletionChunk['choices'][number]['delta'],
    finishReason: FinishReason | null,
    logprobs: ChatLogprobs | null = null,
  ): ChatCompletionChunk {
    return { ...this.envelope(), choices: [{ index: 0, delta, logprobs, finish_reason: finishReason }] };
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
    return { ...this.envelope(), choices: [], usage };
  }

  /** The fields every chunk of this completion carries. */
  private envelope(): Omit<ChatCompletionChunk, 'choices' | 'usage'> {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      system_fingerprint: null,
    };
  }

  completion(
    content: string | null,
    finishReason: FinishReason,
    usage: Usage,
    extras: CompletionExtras = {},
  ): ChatCompletion {
    const message: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content, refusal: null };
    if (extras.reasoning !== undefined) message.reasoning_content = extras.reasoning;
    if (extras.toolCalls !== undefined && extras.toolCalls.length > 0) message.tool_calls = extras.toolCalls;
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      system_fingerprint: null,
      choices: [{ index: 0, message, logprobs: extras.logprobs ?? null, finish_reason: finishReason }],
      usage,
    };
  }

  /**
   * The SSE text of one delta of a stream (the role chunk is roleChunk(), sent by the responder at commit):
   * content -> a content chunk (with `logprobs.content` when given); reasoning -> `delta.reasoning_content`; tool_call -> a `delta.tool_calls`
   * chunk shaped as OpenAI streams it; finish -> the finish chunk, the usage chunk when `includeUsage` and
   * usage is known, and `[DONE]`.
   */
  deltaEvent(delta: ChatDelta, includeUsage: boolean): string {
    switch (delta.type) {
      case 'content':
        if (delta.logprobs === undefined) return this.contentEvent(delta.text);
        return sseData(this.chunk({ content: delta.text }, null, toChatLogprobs(delta.logprobs)));
      case 'reasoning':
        return sseData(this.chunk({ reasoning_content: delta.text }, null));
      case 'tool_call':
        return sseData(this.chunk({ tool_calls: [toolCallDelta(delta)] }, null));
      case 'finish': {
        let tail = sseData(this.finishChunk(delta.reason));
        if (includeUsage && delta.usage !== undefined) tail += sseData(this.usageChunk(usageOf(delta.usage)));
        return tail + SSE_DONE;
      }
    }
  }
}

export interface CompletionExtras {
  toolCalls?: ChatToolCallObject[] | undefined;
  logprobs?: ChatLogprobs | undefined;
  /** The thinking text, as `message.reasoning_content` (only when the model produced some). */
  reasoning?: string | undefined;
}

/** OpenAI's `delta.tool_calls[0]` for one fragment: index, id, type and name only on a call's first fragment. */
export function toolCallDelta(delta: Extract<ChatDelta, { type: 'tool_call' }>): ChatToolCallDelta {
  if (delta.id === undefined && delta.name === undefined)
    return { index: delta.index, function: { arguments: delta.arguments } };
  return {
    index: delta.index,
    ...(delta.id !== undefined ? { id: delta.id } : {}),
    type: 'function',
    function:
      delta.name !== undefined ? { name: delta.name, arguments: delta.arguments } : { arguments: delta.arguments },
  };
}

export function toChatTokenLogprob(lp: TokenLogprob): ChatTokenLogprob {
  return {
    token: lp.token,
    logprob: lp.logprob,
    bytes: lp.bytes,
    top_logprobs: lp.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  };
}

export function toChatLogprobs(lps: readonly TokenLogprob[]): ChatLogprobs {
  return { content: lps.map(toChatTokenLogprob), refusal: null };
}

/** OpenAI usage of a finish delta's counts (prompt_tokens_details only when the producer knows cached tokens). */
export function usageOf(usage: ChatUsage): Usage {
  return makeUsage(usage.promptTokens, usage.completionTokens, usage.cachedTokens);
}

export function makeUsage(promptTokens: number, completionTokens: number, cachedTokens?: number): Usage {
  const usage: Usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
  if (cachedTokens !== undefined) usage.prompt_tokens_details = { cached_tokens: cachedTokens };
  return usage;
}
