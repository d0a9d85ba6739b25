import { expect } from 'vitest';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { rawChatRequest } from './abandoned-requests.ts';
import { postChat } from './chat-request.ts';
import { type HearthProcess, modelArgs, type ServeSettings, startHearthProcess } from './hearth-process.ts';

/**
 * The server of the client-leaves suites (issue 36, contract "A client that leaves"; e2e and fuzz): the tiny llama
 * that never stops by itself, with a 32k-token context, so that only a cancel ends its generations in time.
 */
export const NEVER_STOPS = 'local/never-stops';
const CONTEXT = 32_768;

/** A ready `hearth serve` on NEVER_STOPS, generations of up to 100,000 tokens, then `settings` (slots, queue, front). */
export async function serveNeverStopping32k(settings: ServeSettings): Promise<HearthProcess> {
  const model = await ensureTinyModel({ reply: null, contextLength: CONTEXT });
  const hearth = await startHearthProcess({
    args: modelArgs(model, NEVER_STOPS, { 'max-tokens': 100000, 'context-size': CONTEXT, ...settings }),
  });
  await hearth.waitReady();
  return hearth;
}

/** The raw request of a client that will leave: a 90,000-token chat ('go') with `key`, streamed when `stream`. */
export function leavingRequest(key: string, stream?: boolean): string {
  return rawChatRequest(key, {
    model: NEVER_STOPS,
    messages: [{ role: 'user', content: 'go' }],
    max_tokens: 90_000,
    stream,
  });
}

/** The request that must be served once the clients left: a 2-token chat ('next'), its response unread. */
export function nextChat(hearth: HearthProcess): Promise<Response> {
  return postChat(hearth, { model: NEVER_STOPS, messages: [{ role: 'user', content: 'next' }], max_tokens: 2 });
}

/** `r`, a nextChat response, is served: 200 with its 2 completion tokens (`what` names the case in a failure). */
export async function expectServed(r: Response, what?: string): Promise<void> {
  expect(r.status, what).toBe(200);
  expect(((await r.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens, what).toBe(2);
}
