import { expect } from 'vitest';
import type { HearthProcess } from './hearth-process.ts';

/** The first JSON log line of a `hearth serve` child whose msg is `msg` (throws, with the log, when there is none). */
export function logLine(s: HearthProcess, msg: string): Record<string, unknown> {
  const line = s
    .logs()
    .split('\n')
    .find((l) => l.includes(`"msg":"${msg}"`));
  if (!line) throw new Error(`no "${msg}" in the log:\n${s.logs()}`);
  return JSON.parse(line) as Record<string, unknown>;
}

/** A greedy "Say hello." chat completion of `model` on `s` (status 200 asserted); its reply text. */
export async function greedyReply(s: HearthProcess, model: string): Promise<string> {
  const r = await fetch(`${s.baseUrl}/api/inference/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }], temperature: 0 }),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
}
