import type { IncomingHttpHeaders } from 'node:http';
import type { NormalizedRequest } from './fake-upstream.ts';

/** Pieces shared by the OpenAI and Mistral fakes (both speak the chat-completions wire format). */

export type JsonObject = Record<string, unknown>;
export const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
export const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

export function bearerKey(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (typeof auth !== 'string') return undefined;
  const match = /^Bearer (.+)$/i.exec(auth);
  return match?.[1];
}

export function chatCompletionsRoute(method: string, url: URL, body: unknown, basePath: string): { stream: boolean; model: string } | null {
  if (method !== 'POST' || url.pathname !== `${basePath}/chat/completions`) return null;
  const b = isObj(body) ? body : {};
  return { stream: b.stream === true, model: typeof b.model === 'string' ? b.model : '' };
}

/** Reads a chat-completions body back into neutral terms; `maxTokensField` and `seedField` differ per vendor. */
export function describeChatCompletions(body: unknown, maxTokensFields: string[], seedField: string): NormalizedRequest {
  const b = isObj(body) ? body : {};
  const raw = Array.isArray(b.messages) ? b.messages.filter(isObj) : [];
  const system = raw.filter((m) => m.role === 'system').map((m) => String(m.content));
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop.map(String) : undefined;
  let maxTokens: number | undefined;
  for (const f of maxTokensFields) maxTokens ??= num(b[f]);
  return {
    model: typeof b.model === 'string' ? b.model : '',
    stream: b.stream === true,
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages: raw.filter((m) => m.role !== 'system').map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: String(m.content) })),
    temperature: num(b.temperature),
    topP: num(b.top_p),
    maxTokens,
    stop,
    seed: num(b[seedField]),
  };
}

/** `data: <json>\n\n`, the chat-completions SSE framing. */
export const dataEvent = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;
export const DONE_EVENT = 'data: [DONE]\n\n';
export const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' };
