import { randomBytes } from 'node:crypto';
import { upstreamBadResponse, upstreamError } from '../errors/errors.ts';
import type { ChatDelta, ChatFinishReason } from '../protocol/chat-delta.ts';
import type { SecretScrubber } from './secret-scrubber.ts';
import { mergeUsage, toChatUsage, type UsageCounts, type VendorEvent } from './vendor-adapter.ts';

const MAX_MESSAGE_CHARS = 500;

/** `call_` + 24 url-safe random chars, for vendors whose calls carry no id (Gemini). */
export function newToolCallId(): string {
  return `call_${randomBytes(18).toString('base64url')}`;
}

/**
 * Turns one answer's VendorEvents (JSON reply or stream) into ChatDeltas: text -> content; tool-call
 * fragments -> tool_call deltas with 0-based indices in order of first appearance (vendor keys mapped), the
 * first fragment of each call with an id (generated when the vendor has none) and a name; a call that got
 * no argument text at all gets `{}` before the finish; finish reason `tool_calls` whenever the answer made
 * calls and did not run out of tokens (Gemini has no such reason; OpenAI says `stop` for a forced call);
 * usage merged over the answer and put on the one finish delta. An `error` event throws the vendor's message,
 * scrubbed, as a 502. One per answer; pure apart from id generation.
 */
export class DeltaAssembler {
  private finishReason: ChatFinishReason | undefined;
  private usage: UsageCounts = {};
  private ended = false;
  private readonly indexOfKey = new Map<number | string, number>();
  private readonly argumentChars: number[] = [];

  constructor(
    private readonly provider: string,
    private readonly scrubber: SecretScrubber,
  ) {}

  /** True once the vendor's end marker was seen: nothing after it is read. */
  get done(): boolean {
    return this.ended;
  }

  /** The deltas for one event (zero or one). */
  accept(event: VendorEvent): ChatDelta | null {
    switch (event.type) {
      case 'text':
        return event.text === '' ? null : { type: 'content', text: event.text };
      case 'tool_call':
        return this.toolCall(event);
      case 'finish':
        this.finishReason ??= event.reason;
        return null;
      case 'usage':
        this.usage = mergeUsage(this.usage, event.usage);
        return null;
      case 'end':
        this.ended = true;
        return null;
      case 'error': {
        let message = this.scrubber.scrub(event.message.replace(/\s+/g, ' '));
        if (message.length > MAX_MESSAGE_CHARS) message = `${message.slice(0, MAX_MESSAGE_CHARS)}...`;
        throw event.status !== undefined
          ? upstreamError(this.provider, event.status, message)
          : upstreamBadResponse(this.provider, `error in the stream: ${message}`, 'stream_error');
      }
    }
  }

  /**
   * The closing deltas: `{}` arguments for calls that got none, then the finish. A stream (`complete` false)
   * that ended with neither an end marker nor a finish reason is a 502 `stream_interrupted`; a JSON reply
   * without a finish reason finishes with `stop`.
   */
  close(requireEnd: boolean): ChatDelta[] {
    if (requireEnd && !this.ended && this.finishReason === undefined) {
      throw upstreamBadResponse(this.provider, 'the stream ended before the answer was complete', 'stream_interrupted');
    }
    const out: ChatDelta[] = [];
    this.argumentChars.forEach((chars, index) => {
      if (chars === 0) out.push({ type: 'tool_call', index, arguments: '{}' });
    });
    let reason = this.finishReason ?? 'stop';
    if (this.argumentChars.length > 0 && reason === 'stop') reason = 'tool_calls';
    out.push({ type: 'finish', reason, usage: toChatUsage(this.usage) });
    return out;
  }

  private toolCall(event: Extract<VendorEvent, { type: 'tool_call' }>): ChatDelta {
    const known = event.key === undefined ? undefined : this.indexOfKey.get(event.key);
    if (known !== undefined) {
      this.argumentChars[known] = (this.argumentChars[known] ?? 0) + event.arguments.length;
      return { type: 'tool_call', index: known, arguments: event.arguments };
    }
    const index = this.argumentChars.length;
    if (event.key !== undefined) this.indexOfKey.set(event.key, index);
    this.argumentChars.push(event.arguments.length);
    return {
      type: 'tool_call',
      index,
      id: event.id ?? newToolCallId(),
      name: event.name ?? '',
      arguments: event.arguments,
    };
  }
}
