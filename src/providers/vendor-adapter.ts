import type { FinishReason, Usage } from '../protocol/openai-types.ts';
import { upstreamBadResponse } from '../errors/errors.ts';
import { makeUsage } from '../protocol/completion-builder.ts';
import type { ProviderCall, ProviderName, ResolvedProviderOptions } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';

/**
 * The vendor-specific half of a provider: pure translation between Hearth's validated ChatRequest /
 * OpenAI objects and one vendor's wire format. No I/O, no state: HttpChatProvider does the fetching,
 * retrying and stream assembly. Every function may throw an ApiError (e.g. a parameter the vendor
 * cannot honour -> 400 naming it; an error event in a stream -> 502).
 */
export interface VendorAdapter {
  readonly name: ProviderName;
  /** The HTTP request for one call; `stream` selects the vendor's streaming variant. */
  buildRequest(call: ProviderCall, stream: boolean, options: ResolvedProviderOptions): UpstreamRequest;
  /** A parsed 2xx JSON body -> the reply. */
  parseReply(body: unknown): VendorReply;
  /**
   * One SSE event of a 2xx stream -> zero or more normalized events, in order. A stream is complete at
   * the vendor's end marker, or at EOF once a finish reason was seen (Gemini has no end marker).
   */
  parseStreamEvent(event: SseEvent): VendorStreamEvent[];
}

export interface VendorReply {
  text: string;
  finishReason: FinishReason;
  usage?: UsageCounts | undefined;
}

/** Token counts as far as known; later values replace earlier ones field by field. */
export interface UsageCounts {
  promptTokens?: number | undefined;
  completionTokens?: number | undefined;
  cachedTokens?: number | undefined;
}

export type VendorStreamEvent =
  | { type: 'text'; text: string }
  | { type: 'finish'; reason: FinishReason }
  | { type: 'usage'; usage: UsageCounts }
  /** The vendor's end-of-stream marker (`[DONE]`, `message_stop`). */
  | { type: 'end' };

export function mergeUsage(into: UsageCounts, from: UsageCounts): UsageCounts {
  return {
    promptTokens: from.promptTokens ?? into.promptTokens,
    completionTokens: from.completionTokens ?? into.completionTokens,
    cachedTokens: from.cachedTokens ?? into.cachedTokens,
  };
}

/** OpenAI usage from counts; undefined when the vendor reported nothing. */
export function toUsage(counts: UsageCounts | undefined): Usage | undefined {
  if (counts === undefined || (counts.promptTokens === undefined && counts.completionTokens === undefined)) return undefined;
  return makeUsage(counts.promptTokens ?? 0, counts.completionTokens ?? 0, counts.cachedTokens);
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
