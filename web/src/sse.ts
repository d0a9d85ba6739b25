/**
 * Server-sent events from a fetch body, as the chat-completions stream sends them: `data: <json>` events
 * separated by a blank line, `: comment` lines (keep-alive) ignored, `data: [DONE]` the end. Pure apart
 * from reading the stream; works in the browser and in Node (tests).
 */
export type SseItem = { kind: 'data'; data: string } | { kind: 'done' };

/** Splits buffered text into complete events; returns them and the unfinished rest. */
export function splitEvents(buffer: string): { events: SseItem[]; rest: string } {
  const events: SseItem[] = [];
  const normalized = buffer.replace(/\r\n?/g, '\n');
  const blocks = normalized.split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data === '') continue; // a comment-only block (keep-alive)
    events.push(data === '[DONE]' ? { kind: 'done' } : { kind: 'data', data });
  }
  return { events, rest };
}

/** Yields each event of an SSE body until it ends (or `[DONE]`). */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseItem> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      const { events, rest } = splitEvents(done ? `${buffer}\n\n` : buffer);
      buffer = rest;
      for (const e of events) {
        yield e;
        if (e.kind === 'done') return;
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}
