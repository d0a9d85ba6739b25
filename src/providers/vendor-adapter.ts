import { upstreamBadResponse } from '../errors/errors.ts';
import type { ChatFinishReason, ChatUsage } from '../protocol/chat-delta.ts';
import type { ProviderCall, ProviderName, ResolvedProviderOptions } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';

/**
 * The vendor-specific half of a provider: pure translation between Hearth's validated ChatRequest and one
 * vendor's wire format, and back into VendorEvents. No I/O, no state: HttpChatProvider does the fetching,
 * retrying, and the assembly of ChatDeltas (DeltaAssembler). Functions may throw an ApiError (a parameter
 * the vendor cannot honour -> 400 naming it; a malformed answer -> 502) but never put upstream text in
 * one: upstream error text travels as an `error` event and is scrubbed by the provider's one scrubber.
 */
export interface VendorAdapter {
  readonly name: ProviderName;
  /** The HTTP request for one call; `stream` selects the vendor's streaming variant. */
  buildRequest(call: ProviderCall, stream: boolean, options: ResolvedProviderOptions): UpstreamRequest;
  /** A parsed 2xx JSON body -> the whole answer as normalized events, in order. */
  parseReply(body: unknown): VendorEvent[];
  /**
   * One SSE event of a 2xx stream -> zero or more normalized events, in order. A stream is complete at
   * the vendor's end marker, or at EOF once a finish reason was seen (Gemini has no end marker).
   */
  parseStreamEvent(event: SseEvent): VendorEvent[];
}

/** Token counts as far as known; later values replace earlier ones field by field. */
export interface UsageCounts {
  promptTokens?: number | undefined;
  completionTokens?: number | undefined;
  cachedTokens?: number | undefined;
}

export type VendorEvent =
  | { type: 'text'; text: string }
  /**
   * A fragment of a tool call. `key` identifies the call within the answer (OpenAI's index, Anthropic's
   * content-block index); fragments with the same key belong together; no key = a new, whole call (Gemini).
   * The first fragment of a call carries `name` (and `id` when the vendor has one).
   */
  | {
      type: 'tool_call';
      key?: number | string | undefined;
      id?: string | undefined;
      name?: string | undefined;
      arguments: string;
    }
  | { type: 'finish'; reason: ChatFinishReason }
  | { type: 'usage'; usage: UsageCounts }
  /** The vendor's end-of-stream marker (`[DONE]`, `message_stop`). */
  | { type: 'end' }
  /**
   * The vendor reported a failure inside a 2xx answer (an in-stream error event, Gemini's error object).
   * `message` is raw upstream text: the provider scrubs it. With `status`: 502 code = that status; without: 502 `stream_error`.
   */
  | { type: 'error'; message: string; status?: number | undefined };

export function mergeUsage(into: UsageCounts, from: UsageCounts): UsageCounts {
  return {
    promptTokens: from.promptTokens ?? into.promptTokens,
    completionTokens: from.completionTokens ?? into.completionTokens,
    cachedTokens: from.cachedTokens ?? into.cachedTokens,
  };
}

/** Usage of a finish delta from counts; undefined when the vendor reported nothing. */
export function toChatUsage(counts: UsageCounts | undefined): ChatUsage | undefined {
  if (counts === undefined || (counts.promptTokens === undefined && counts.completionTokens === undefined))
    return undefined;
  return {
    promptTokens: counts.promptTokens ?? 0,
    completionTokens: counts.completionTokens ?? 0,
    cachedTokens: counts.cachedTokens,
  };
}

/** The temperature to send: the request's, else the project's stored default, else none. */
export function effectiveTemperature(call: ProviderCall): number | undefined {
  return call.request.temperature ?? call.defaultTemperature;
}

/** Non-negative integer or undefined: vendor token counts are trusted only when they are numbers. */
export function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : undefined;
}

/** Drops undefined members so request bodies carry only what was set. */
export function compact<T extends Record<string, unknown>>(obj: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) out[k] = v;
  return out as Partial<T>;
}

export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON from an upstream body or event; anything else is a 502 `bad_response` (no upstream text quoted). */
export function parseUpstreamJson(text: string, provider: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw upstreamBadResponse(provider, 'the answer is not valid JSON');
  }
}
