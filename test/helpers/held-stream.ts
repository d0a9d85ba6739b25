import http from 'node:http';

/** A streamed chat held open: its answer's headers, and `close()` to leave it (the client's socket destroyed). */
export interface HeldStream {
  headers: http.IncomingHttpHeaders;
  close(): void;
}

/**
 * Sends `body` as JSON in a POST to `url` with the Bearer `key` through node:http, so that a test can destroy the
 * socket mid-answer; answers the request, already ended: the caller listens for 'response' and 'error' (both come
 * later than this call).
 */
export function postJson(url: string, key: string, body: unknown): http.ClientRequest {
  const text = JSON.stringify(body);
  const req = http.request(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    },
  });
  req.end(text);
  return req;
}

/**
 * Opens a streamed chat completion of up to 50,000 tokens with `key` and resolves once its first bytes arrived
 * (the request holds a slot from then on); rejects on any status but 200. `extra` adds body fields.
 */
export function holdStream(
  baseUrl: string,
  model: string,
  key: string,
  extra: Record<string, unknown> = {},
): Promise<HeldStream> {
  return new Promise((resolve, reject) => {
    const req = postJson(`${baseUrl}/api/inference/v1/chat/completions`, key, {
      model,
      messages: [{ role: 'user', content: 'go' }],
      stream: true,
      max_tokens: 50_000,
      ...extra,
    });
    let opened = false;
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      res.once('data', () => {
        opened = true;
        resolve({ headers: res.headers, close: () => req.destroy() });
      });
    });
    req.on('error', (e) => (opened ? undefined : reject(e)));
  });
}
