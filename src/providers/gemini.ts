import { invalidRequest, upstreamBadResponse, upstreamError } from '../errors/errors.ts';
import type { ChatMessage } from '../protocol/chat-request.ts';
import type { FinishReason } from '../protocol/openai-types.ts';
import type { ProviderCall, ResolvedProviderOptions } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';
import { scrubSecrets } from './upstream-errors.ts';
import {
  compact, count, effectiveTemperature, isObject, parseUpstreamJson,
  type Json, type UsageCounts, type VendorAdapter, type VendorReply, type VendorStreamEvent,
} from './vendor-adapter.ts';

/**
 * Gemini API: POST {base}/v1beta/models/{model}:generateContent, or :streamGenerateContent?alt=sse
 * (SSE `data: {...}` events framed with `\r\n\r\n`, no end marker: the stream ends after the chunk
 * carrying finishReason), with the `x-goog-api-key` header. Translation (README.md "Upstream providers"):
 *  - roles user -> user, assistant -> model; consecutive same-role messages merged (blank line);
 *    system messages -> `systemInstruction` (joined with a blank line);
 *  - generationConfig {temperature, topP, maxOutputTokens, stopSequences, seed, presencePenalty, frequencyPenalty};
 *  - finishReason STOP -> stop, MAX_TOKENS -> length; SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT,
 *    SPII, LANGUAGE, OTHER, ... -> stop (Hearth's finish reasons are stop | length; the text is whatever
 *    Gemini returned, possibly empty). A prompt blocked outright (promptFeedback.blockReason, no
 *    candidates) is an empty answer with finish_reason stop;
 *  - usageMetadata: prompt_tokens = promptTokenCount, completion_tokens = candidatesTokenCount +
 *    thoughtsTokenCount, cached_tokens = cachedContentTokenCount. Parts marked `thought` are not text.
 *  - a model stored as `models/gemini-x` is accepted (the prefix is dropped).
 */
type GeminiContent = { role: 'user' | 'model'; parts: Array<{ text: string }> };

export function toGeminiContents(messages: readonly ChatMessage[]): { systemInstruction: { parts: Array<{ text: string }> } | undefined; contents: GeminiContent[] } {
  const system: string[] = [];
  const contents: GeminiContent[] = [];
  for (const m of messages) {
    if (m.role === 'system') {
      system.push(m.content);
      continue;
    }
    const role = m.role === 'assistant' ? 'model' : 'user';
    const last = contents[contents.length - 1];
    const lastPart = last?.parts[0];
    if (last !== undefined && last.role === role && lastPart !== undefined) lastPart.text = `${lastPart.text}\n\n${m.content}`;
    else contents.push({ role, parts: [{ text: m.content }] });
  }
  if (contents.length === 0) {
    throw invalidRequest("Provider gemini needs at least one user or assistant message; 'messages' has only system messages", 'messages', 'invalid_value');
  }
  return { systemInstruction: system.length > 0 ? { parts: [{ text: system.join('\n\n') }] } : undefined, contents };
}

export function geminiFinishReason(reason: string): FinishReason {
  return reason === 'MAX_TOKENS' ? 'length' : 'stop';
}

export function geminiUsage(meta: unknown): UsageCounts | undefined {
  if (!isObject(meta)) return undefined;
  const candidates = count(meta.candidatesTokenCount);
  const thoughts = count(meta.thoughtsTokenCount);
  return {
    promptTokens: count(meta.promptTokenCount),
    completionTokens: candidates === undefined && thoughts === undefined ? undefined : (candidates ?? 0) + (thoughts ?? 0),
    cachedTokens: count(meta.cachedContentTokenCount),
  };
}

export function geminiModelPath(model: string): string {
  return encodeURIComponent(model.replace(/^models\//, ''));
}

export function buildGeminiRequest(call: ProviderCall, stream: boolean, options: ResolvedProviderOptions): UpstreamRequest {
  const r = call.request;
  const { systemInstruction, contents } = toGeminiContents(r.messages);
  const generationConfig = compact({
    temperature: effectiveTemperature(call),
    topP: r.topP,
    maxOutputTokens: r.maxTokens,
    stopSequences: r.stop.length > 0 ? r.stop : undefined,
    seed: r.seed,
    presencePenalty: r.presencePenalty,
    frequencyPenalty: r.frequencyPenalty,
  });
  const body = compact({
    contents,
    systemInstruction,
    generationConfig: Object.keys(generationConfig).length > 0 ? generationConfig : undefined,
  });
  const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return {
    url: `${options.baseUrl}/v1beta/models/${geminiModelPath(call.model)}:${method}`,
    headers: {
      'x-goog-api-key': call.apiKey,
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
    },
    body: JSON.stringify(body),
  };
}

/** Text, finish reason and usage of one GenerateContentResponse (a whole reply or one stream chunk). */
function readResponse(body: Json): { text: string; finish: FinishReason | undefined; usage: UsageCounts | undefined } {
  const candidate = Array.isArray(body.candidates) && isObject(body.candidates[0]) ? body.candidates[0] : undefined;
  const parts = candidate !== undefined && isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts : [];
  const text = parts.map((p) => (isObject(p) && p.thought !== true && typeof p.text === 'string' ? p.text : '')).join('');
  let finish: FinishReason | undefined;
  if (candidate !== undefined && typeof candidate.finishReason === 'string') finish = geminiFinishReason(candidate.finishReason);
  else if (candidate === undefined && isObject(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string') finish = 'stop';
  return { text, finish, usage: geminiUsage(body.usageMetadata) };
}

function throwIfError(body: Json): void {
  if (!isObject(body.error)) return;
  const status = typeof body.error.code === 'number' ? body.error.code : 500;
  const message = typeof body.error.message === 'string' ? scrubSecrets(body.error.message, []) : 'unknown error';
  throw upstreamError('gemini', status, message);
}

export function parseGeminiReply(body: unknown): VendorReply {
  if (!isObject(body)) throw upstreamBadResponse('gemini', 'the answer is not a JSON object');
  throwIfError(body);
  const { text, finish, usage } = readResponse(body);
  return { text, finishReason: finish ?? 'stop', usage };
}

export function parseGeminiEvent(event: SseEvent): VendorStreamEvent[] {
  if (event.data.trim() === '') return [];
  const body = parseUpstreamJson(event.data, 'gemini');
  if (!isObject(body)) throw upstreamBadResponse('gemini', 'a stream event is not a JSON object');
  throwIfError(body);
  const { text, finish, usage } = readResponse(body);
  const out: VendorStreamEvent[] = [];
  if (text !== '') out.push({ type: 'text', text });
  if (finish !== undefined) out.push({ type: 'finish', reason: finish });
  if (usage !== undefined) out.push({ type: 'usage', usage });
  return out;
}

export const geminiAdapter: VendorAdapter = {
  name: 'gemini',
  buildRequest: buildGeminiRequest,
  parseReply: parseGeminiReply,
  parseStreamEvent: parseGeminiEvent,
};
