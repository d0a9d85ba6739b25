import { upstreamBadResponse } from '../errors/errors.ts';
import type { ChatDelta } from '../protocol/chat-delta.ts';
import type { ChatProvider, ProviderCall, ProviderName, ResolvedProviderOptions } from './chat-provider.ts';
import { readBodyChunks, readBodyText } from './body-reader.ts';
import { DeltaAssembler } from './delta-assembler.ts';
import { SseParser, type SseEvent } from './sse-parser.ts';
import { UpstreamCall } from './upstream-call.ts';
import { sendUpstream } from './upstream-fetch.ts';
import { parseUpstreamJson, type VendorAdapter } from './vendor-adapter.ts';

/**
 * A ChatProvider made of a VendorAdapter (wire format) and Hearth's one upstream policy (sendUpstream:
 * retries, time-outs, the call's deadline, abort, no redirects). Stateless and shareable; each call owns its
 * UpstreamCall scope and its exchange and releases both in `finally`, also when the consumer stops early.
 * Every error leaving chat() passes the call's one scrubber (UpstreamCall.failure).
 */
export class HttpChatProvider implements ChatProvider {
  constructor(
    private readonly adapter: VendorAdapter,
    private readonly options: ResolvedProviderOptions,
  ) {}

  get name(): ProviderName {
    return this.adapter.name;
  }

  async *chat(call: ProviderCall): AsyncGenerator<ChatDelta> {
    const scope = new UpstreamCall(this.name, call.signal, this.options.deadlineMs, call.apiKey);
    try {
      const stream = call.request.stream;
      const request = this.adapter.buildRequest(call, stream, this.options);
      const { response, attempt } = await sendUpstream(request, scope, this.options);
      try {
        const assembler = new DeltaAssembler(this.name, scope.scrubber);
        if (!stream) {
          const text = await readBodyText(
            response,
            attempt,
            this.options.idleTimeoutMs,
            this.options.maxResponseBytes,
            this.name,
          );
          for (const event of this.adapter.parseReply(parseUpstreamJson(text, this.name))) {
            const delta = assembler.accept(event);
            if (delta !== null) yield delta;
          }
          yield* assembler.close(false);
          return;
        }
        const parser = new SseParser(this.options.maxResponseBytes);
        reading: for await (const bytes of readBodyChunks(response, attempt, this.options.idleTimeoutMs, this.name)) {
          for (const event of this.parse(parser, bytes)) {
            for (const item of this.adapter.parseStreamEvent(event)) {
              const delta = assembler.accept(item);
              if (delta !== null) yield delta;
              if (assembler.done) break reading;
            }
          }
        }
        yield* assembler.close(true);
      } finally {
        attempt.dispose();
      }
    } catch (err) {
      throw scope.failure(err);
    } finally {
      scope.dispose();
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
