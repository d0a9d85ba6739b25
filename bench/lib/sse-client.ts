import http from 'node:http';

/** One streamed chat completion as the client saw it. */
export interface StreamOutcome {
  status: number;
  /** The Retry-After header, if any (rejections). */
  retryAfter: string | null;
  /** performance.now() at send, first content event, end of response. */
  sentAt: number;
  firstContentAt: number;
  endedAt: number;
  /** Parsed `data:` payloads in order, except the final [DONE]. */
  chunks: Array<{
    choices: Array<{ delta: { role?: string; content?: string }; finish_reason: string | null }>;
    usage?: { completion_tokens: number; prompt_tokens: number };
  }>;
  done: boolean;
  content: string;
  contentEvents: number;
  error: string | null;
}

export const keepAliveAgent = (maxSockets: number) => new http.Agent({ keepAlive: true, maxSockets });

/** A POST of the JSON `payload` to Hearth's API with `key` (Bearer): the caller adds its listeners, then `end(payload)`. */
export function postApiRequest(url: string, key: string, payload: string, agent?: http.Agent): http.ClientRequest {
  return http.request(url, {
    method: 'POST',
    agent,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload),
    },
  });
}

/**
 * POSTs a streaming chat request with node:http and parses its SSE events as they arrive (each one
 * JSON.parse'd: the checks are real, not a byte count). Resolves when the response ends, errors, or
 * `timeoutMs` passes (then `error` says so and the request is destroyed).
 */
export function streamChat(
  url: string,
  key: string,
  body: Record<string, unknown>,
  o: { agent?: http.Agent; timeoutMs?: number } = {},
): Promise<StreamOutcome> {
  const payload = JSON.stringify({ ...body, stream: true });
  const r: StreamOutcome = {
    status: 0,
    retryAfter: null,
    sentAt: performance.now(),
    firstContentAt: 0,
    endedAt: 0,
    chunks: [],
    done: false,
    content: '',
    contentEvents: 0,
    error: null,
  };
  return new Promise((resolve) => {
    let settled = false;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      r.endedAt = performance.now();
      if (error !== null) r.error = error;
      resolve(r);
    };
    const req = postApiRequest(url, key, payload, o.agent);
    const timer = setTimeout(() => {
      req.destroy();
      finish(`client time-out after ${o.timeoutMs} ms`);
    }, o.timeoutMs ?? 120_000);
    req.on('error', (e) => finish(e.message));
    req.on('response', (res) => {
      r.status = res.statusCode ?? 0;
      r.retryAfter = (res.headers['retry-after'] as string | undefined) ?? null;
      res.setEncoding('utf8');
      let buffered = '';
      let parseError: string | null = null;
      res.on('data', (text: string) => {
        buffered += text;
        let at = 0;
        let cut: number;
        while ((cut = buffered.indexOf('\n\n', at)) !== -1) {
          const event = buffered.slice(at, cut);
          at = cut + 2;
          if (!event.startsWith('data: ')) continue; // comments (keep-alive)
          const data = event.slice(6);
          if (data === '[DONE]') {
            r.done = true;
            continue;
          }
          if (r.done) parseError ??= 'data after [DONE]';
          try {
            const chunk = JSON.parse(data) as StreamOutcome['chunks'][number];
            r.chunks.push(chunk);
            const content = chunk.choices?.[0]?.delta?.content;
            if (content) {
              if (r.firstContentAt === 0) r.firstContentAt = performance.now();
              r.content += content;
              r.contentEvents++;
            }
          } catch {
            parseError ??= `unparseable event: ${data.slice(0, 120)}`;
          }
        }
        buffered = buffered.slice(at);
      });
      res.on('end', () =>
        finish(parseError ?? (buffered.trim() !== '' ? `trailing bytes: ${buffered.slice(0, 80)}` : null)),
      );
      res.on('error', (e) => finish(e.message));
    });
    req.end(payload);
  });
}
