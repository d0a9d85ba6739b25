/**
 * POSTs `body` (JSON) to Hearth's chat completions route at `baseUrl` with the API key `key`, by fetch: the
 * response comes back unread (JSON or SSE, as `body` asked). For the benches that measure one request at a time;
 * the load generators use node:http (sse-client.ts, timed-sse.ts).
 */
export function postChat(baseUrl: string, key: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${baseUrl}/api/inference/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}
