import { upstreamBadResponse } from '../errors/errors.ts';
import { CompletionBuilder, makeUsage } from '../protocol/completion-builder.ts';
import type { ChatCompletion, ChatCompletionChunk, FinishReason } from '../protocol/openai-types.ts';
import type { ChatProvider, ProviderCall, ProviderName, ResolvedProviderOptions } from './chat-provider.ts';
import { readBodyChunks, readBodyText } from './body-reader.ts';
import { SseParser, type SseEvent } from './sse-parser.ts';
import { StreamAssembler } from './stream-assembler.ts';
import { sendUpstream } from './upstream-fetch.ts';
import { mergeUsage, parseUpstreamJson, toUsage, type UsageCounts, type VendorAdapter } from './vendor-adapter.ts';

/**
 * A ChatProvider made of a VendorAdapter (wire format) and Hearth's one upstream policy (sendUpstream:
 * retries, time-outs, abort). Stateless and shareable; each call owns its own exchange and releases it
 * in `finally`, also when the consumer of stream() stops iterating early.
 */
export class HttpChatProvider implements ChatProvider {
  constructor(
    private readonly adapter: VendorAdapter,
    private readonly options: ResolvedProviderOptions,
  ) {}

  get name(): ProviderName {
    return this.adapter.name;
  }

  async complete(call: ProviderCall): Promise<ChatCompletion> {
    const request = this.adapter.buildRequest(call, false, this.options);
    const { response, attempt } = await sendUpstream(this.name, request, call, this.options);
    try {
      const text = await readBodyText(response, attempt, this.options.idleTimeoutMs, this.options.maxResponseBytes, this.name);
      const reply = this.adapter.parseReply(parseUpstreamJson(text, this.name));
      return new CompletionBuilder(call.model).completion(reply.text, reply.finishReason, toUsage(reply.usage) ?? makeUsage(0, 0));
    } finally {
      attempt.dispose();
    }
  }

  async *stream(call: ProviderCall): AsyncGenerator<ChatCompletionChunk> {
    const request = this.adapter.buildRequest(call, true, this.options);
    const { response, attempt } = await sendUpstream(this.name, request, call, this.options);
    try {
      const assembler = new StreamAssembler(call.model, call.request.includeUsage);
      const parser = new SseParser(this.options.maxResponseBytes);
      let finish: FinishReason | undefined;
      let usage: UsageCounts = {};
      let ended = false;
      reading: for await (const bytes of readBodyChunks(response, attempt, this.options.idleTimeoutMs, this.name)) {
        for (const event of this.parse(parser, bytes)) {
          for (const item of this.adapter.parseStreamEvent(event)) {
            if (item.type === 'text') yield* assembler.content(item.text);
            else if (item.type === 'finish') finish ??= item.reason;
            else if (item.type === 'usage') usage = mergeUsage(usage, item.usage);
            else {
              ended = true;
              break reading;
            }
          }
        }
      }
      if (!ended && finish === undefined) {
        throw upstreamBadResponse(this.name, 'the stream ended before the answer was complete', 'stream_interrupted');
      }
      yield* assembler.finish(finish ?? 'stop', toUsage(usage));
    } finally {
      attempt.dispose();
    }
  }

  private parse(parser: SseParser, bytes: Uint8Array): SseEvent[] {
    try {
      return parser.push(bytes);
    } catch {
      throw upstreamBadResponse(this.name, `a stream event exceeds the size limit (${this.options.maxResponseBytes})`);
    }
  }
}
