/** Where a test sends chat requests: a `hearth serve` (HearthProcess) or anything with its base URL and an API key. */
export interface ChatTarget {
  baseUrl: string;
  key: string;
}

/**
 * POSTs `body` as JSON to `target`'s shared-model chat completions route (`/api/inference/v1/chat/completions`)
 * with its key as Bearer; answers the fetch Response unread (status not checked). `init` adds fetch options
 * (a `signal` to abort a stream).
 */
export function postChat(target: ChatTarget, body: Record<string, unknown>, init: RequestInit = {}): Promise<Response> {
  return fetch(`${target.baseUrl}/api/inference/v1/chat/completions`, {
    ...init,
    method: 'POST',
    headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}
