/** Server-sent-event framing for chat streams (contract.md "Streaming"). */
export const SSE_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['content-type', 'text/event-stream; charset=utf-8'],
  ['cache-control', 'no-cache'],
  ['x-accel-buffering', 'no'],
  ['connection', 'keep-alive'],
];

export const SSE_DONE = 'data: [DONE]\n\n';
export const SSE_KEEP_ALIVE = ': keep-alive\n\n';

/** One `data:` event. JSON.stringify never emits a raw newline, so a single data line is always valid. */
export function sseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}
