import { upstreamBadResponse } from '../errors/errors.ts';
import type { ChatMessage, ChatRequest } from '../protocol/chat-request.ts';
import type { ChatFinishReason } from '../protocol/chat-delta.ts';
import type { ProviderCall, ResolvedProviderOptions } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import { newToolCallId } from './delta-assembler.ts';
import { toGeminiSchema } from './gemini-schema.ts';
import { argumentsObject, jsonDepth, MAX_ARGUMENT_DEPTH, toolNameOf } from './tool-arguments.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';
import { alternatingTurns } from './alternating-turns.ts';
import { compact, count, effectiveTemperature, isObject, parseUpstreamJson } from './vendor-adapter.ts';
import type { Json, UsageCounts, VendorAdapter, VendorEvent } from './vendor-adapter.ts';

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
 *  - a model stored as `models/gemini-x` is accepted (the prefix is dropped);
 *  - tools / tool_choice / response_format: geminiToolFields; an assistant's tool calls -> `functionCall`
 *    parts (arguments parsed to `args`); `tool` messages -> `functionResponse` parts of a user turn, named
 *    after the call they answer; `functionCall` parts of the answer -> whole tool calls (ids generated),
 *    finish_reason tool_calls; a part's thoughtSignature travels in the call's id and is sent back with it.
 */
type GeminiPart =
  | { text: string }
  | { functionCall: { name: string; args: Record<string, unknown> }; thoughtSignature?: string }
  | { functionResponse: { name: string; response: Record<string, unknown> } };
type GeminiContent = { role: 'user' | 'model'; parts: GeminiPart[] };

/**
 * Gemini 3 answers a call with a `thoughtSignature` on its functionCall part and rejects (4xx) a history that
 * does not send it back (ai.google.dev/gemini-api/docs/thought-signatures). OpenAI's shape has no place for it
 * but the call's id, which clients echo verbatim: the id is `<id>~<signature>`, split again on the way back.
 */
const SIGNATURE_SEPARATOR = '~';

export function toolCallIdWithSignature(id: string, signature: string | undefined): string {
  return signature === undefined || signature === '' ? id : `${id}${SIGNATURE_SEPARATOR}${signature}`;
}

export function thoughtSignatureOf(toolCallId: string): string | undefined {
  const at = toolCallId.indexOf(SIGNATURE_SEPARATOR);
  return at === -1 || at === toolCallId.length - 1 ? undefined : toolCallId.slice(at + 1);
}

/** A tool result as functionResponse.response (a JSON object): the result itself when it is one, else {result: <the JSON value or the text>} (over-deep JSON stays text). */
function functionResponseOf(content: string): Record<string, unknown> {
  if (jsonDepth(content) > MAX_ARGUMENT_DEPTH) return { result: content };
  try {
    const value: unknown = JSON.parse(content);
    if (isObject(value)) return value;
    return { result: value };
  } catch {
    return { result: content };
  }
}

function partsOf(m: ChatMessage, index: number, messages: readonly ChatMessage[]): GeminiPart[] {
  if (m.role === 'tool')
    return [
      { functionResponse: { name: toolNameOf(messages, index, 'gemini'), response: functionResponseOf(m.content) } },
    ];
  const parts: GeminiPart[] = m.content === '' && (m.toolCalls?.length ?? 0) > 0 ? [] : [{ text: m.content }];
  (m.toolCalls ?? []).forEach((c, j) => {
    const signature = thoughtSignatureOf(c.id);
    parts.push({
      functionCall: {
        name: c.name,
        args: argumentsObject(c.arguments, `messages[${index}].tool_calls[${j}].function.arguments`, 'gemini'),
      },
      ...(signature !== undefined ? { thoughtSignature: signature } : {}),
    });
  });
  return parts;
}

export function toGeminiContents(messages: readonly ChatMessage[]): {
  systemInstruction: { parts: Array<{ text: string }> } | undefined;
  contents: GeminiContent[];
} {
  const { system, turns } = alternatingTurns(
    'gemini',
    messages,
    (m, i): GeminiContent => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: partsOf(m, i, messages) }),
    mergeParts,
  );
  return { systemInstruction: system === undefined ? undefined : { parts: [{ text: system }] }, contents: turns };
}

/** Same role again: text joins the previous text part (blank line); other parts are appended. */
function mergeParts(into: GeminiContent, add: GeminiContent): void {
  for (const part of add.parts) {
    const prev = into.parts[into.parts.length - 1];
    if ('text' in part && prev !== undefined && 'text' in prev) prev.text = `${prev.text}\n\n${part.text}`;
    else into.parts.push(part);
  }
}

/**
 * `tools` -> one Tool of `functionDeclarations` (parameters converted to Gemini's Schema); tool_choice ->
 * `toolConfig.functionCallingConfig` (auto -> AUTO, required -> ANY, a name -> ANY + allowedFunctionNames,
 * none -> NONE). parallel_tool_calls has no Gemini switch and is not sent. response_format json_object ->
 * responseMimeType application/json; json_schema -> that + `responseSchema`.
 */
export function geminiToolFields(r: ChatRequest): {
  tools?: unknown;
  toolConfig?: unknown;
  generation: Record<string, unknown>;
} {
  const out: { tools?: unknown; toolConfig?: unknown; generation: Record<string, unknown> } = { generation: {} };
  if (r.tools.length > 0) {
    out.tools = [
      {
        functionDeclarations: r.tools.map((t, i) => ({
          name: t.name,
          ...(t.description !== undefined ? { description: t.description } : {}),
          parameters: toGeminiSchema(t.parameters, `tools[${i}].function.parameters`),
        })),
      },
    ];
    const c = r.toolChoice;
    const config =
      c === 'none'
        ? { mode: 'NONE' }
        : c === 'auto'
          ? { mode: 'AUTO' }
          : c === 'required'
            ? { mode: 'ANY' }
            : { mode: 'ANY', allowedFunctionNames: [c.name] };
    out.toolConfig = { functionCallingConfig: config };
  }
  const rf = r.responseFormat;
  if (rf.type === 'json_object') out.generation.responseMimeType = 'application/json';
  else if (rf.type === 'json_schema') {
    out.generation.responseMimeType = 'application/json';
    out.generation.responseSchema = toGeminiSchema(rf.schema, rf.schemaParam);
  }
  return out;
}

export function geminiFinishReason(reason: string): ChatFinishReason {
  return reason === 'MAX_TOKENS' ? 'length' : 'stop';
}

export function geminiUsage(meta: unknown): UsageCounts | undefined {
  if (!isObject(meta)) return undefined;
  const candidates = count(meta.candidatesTokenCount);
  const thoughts = count(meta.thoughtsTokenCount);
  return {
    promptTokens: count(meta.promptTokenCount),
    completionTokens:
      candidates === undefined && thoughts === undefined ? undefined : (candidates ?? 0) + (thoughts ?? 0),
    cachedTokens: count(meta.cachedContentTokenCount),
  };
}

export function geminiModelPath(model: string): string {
  return encodeURIComponent(model.replace(/^models\//, ''));
}

export function buildGeminiRequest(
  call: ProviderCall,
  stream: boolean,
  options: ResolvedProviderOptions,
): UpstreamRequest {
  const r = call.request;
  const { systemInstruction, contents } = toGeminiContents(r.messages);
  const toolFields = geminiToolFields(r);
  const generationConfig = compact({
    temperature: effectiveTemperature(call),
    topP: r.topP,
    maxOutputTokens: r.maxTokens,
    stopSequences: r.stop.length > 0 ? r.stop : undefined,
    seed: r.seed,
    presencePenalty: r.presencePenalty,
    frequencyPenalty: r.frequencyPenalty,
    ...toolFields.generation,
  });
  const body = compact({
    contents,
    systemInstruction,
    tools: toolFields.tools,
    toolConfig: toolFields.toolConfig,
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

/**
 * The events of one GenerateContentResponse (a whole reply or one stream chunk), in part order: text parts
 * (not `thought` parts) and functionCall parts (each a whole call: Gemini does not split arguments), then the
 * finish and the usage. An `error` object is an error event (raw text; the provider scrubs it).
 */
function responseEvents(body: Json): VendorEvent[] {
  if (isObject(body.error)) {
    const status = typeof body.error.code === 'number' ? body.error.code : 500;
    return [
      { type: 'error', status, message: typeof body.error.message === 'string' ? body.error.message : 'unknown error' },
    ];
  }
  const out: VendorEvent[] = [];
  const candidate = Array.isArray(body.candidates) && isObject(body.candidates[0]) ? body.candidates[0] : undefined;
  const parts =
    candidate !== undefined && isObject(candidate.content) && Array.isArray(candidate.content.parts)
      ? candidate.content.parts
      : [];
  for (const p of parts) {
    if (!isObject(p) || p.thought === true) continue;
    if (typeof p.text === 'string' && p.text !== '') out.push({ type: 'text', text: p.text });
    else if (isObject(p.functionCall)) {
      const fc = p.functionCall;
      const signature = typeof p.thoughtSignature === 'string' ? p.thoughtSignature : undefined;
      const id =
        typeof fc.id === 'string' && fc.id !== '' ? fc.id : signature !== undefined ? newToolCallId() : undefined;
      out.push({
        type: 'tool_call',
        id: id === undefined ? undefined : toolCallIdWithSignature(id, signature),
        name: typeof fc.name === 'string' ? fc.name : undefined,
        arguments: JSON.stringify(isObject(fc.args) ? fc.args : {}),
      });
    }
  }
  if (candidate !== undefined && typeof candidate.finishReason === 'string')
    out.push({ type: 'finish', reason: geminiFinishReason(candidate.finishReason) });
  else if (
    candidate === undefined &&
    isObject(body.promptFeedback) &&
    typeof body.promptFeedback.blockReason === 'string'
  )
    out.push({ type: 'finish', reason: 'stop' });
  const usage = geminiUsage(body.usageMetadata);
  if (usage !== undefined) out.push({ type: 'usage', usage });
  return out;
}

export function parseGeminiReply(body: unknown): VendorEvent[] {
  if (!isObject(body)) throw upstreamBadResponse('gemini', 'the answer is not a JSON object');
  // A whole answer has a candidate, or says why not (a blocked prompt), or is an error: else a 502, not an empty 200.
  if (!Array.isArray(body.candidates) && !isObject(body.promptFeedback) && !isObject(body.error))
    throw upstreamBadResponse('gemini', 'the answer has no candidates');
  return responseEvents(body);
}

export function parseGeminiEvent(event: SseEvent): VendorEvent[] {
  if (event.data.trim() === '') return [];
  const body = parseUpstreamJson(event.data, 'gemini');
  if (!isObject(body)) throw upstreamBadResponse('gemini', 'a stream event is not a JSON object');
  return responseEvents(body);
}

export const geminiAdapter: VendorAdapter = {
  name: 'gemini',
  buildRequest: buildGeminiRequest,
  parseReply: parseGeminiReply,
  parseStreamEvent: parseGeminiEvent,
};
