/**
 * A streaming chat-completions client for bench:engine that keeps the time of every content event
 * (bench/lib/sse-client.ts keeps only the first and the last): time to the first content token, the gaps
 * between content events, total, and the usage / cache counters of both Hearth and llama-server.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface StreamTarget {
  baseUrl: string;
  /** e.g. /v1/chat/completions or /api/inference/v1/chat/completions */
  path: string;
  headers?: Record<string, string>;
}

export interface TimedStream {
  ok: boolean;
  status: number;
  error?: string;
  /** ms from sending the request to the first non-empty content delta (NaN if none). */
  firstTokenMs: number;
  /** ms between consecutive content deltas. */
  gapsMs: number[];
  /**
   * Tokens each content delta after the first carries (parallel to gapsMs), where the request asked for
   * logprobs (one `logprobs.content` entry per token); empty otherwise.
   */
  gapTokens: number[];
  totalMs: number;
  /** Non-empty content deltas received. */
  contentEvents: number;
  /** usage.completion_tokens of the stream's usage chunk, else null. */
  completionTokens: number | null;
  promptTokens: number | null;
  /** usage.prompt_tokens_details.cached_tokens (Hearth) or timings.cache_n (llama-server), else null. */
  cachedTokens: number | null;
  finishReason: string | null;
  text: string;
  startedAt: number;
  endedAt: number;
  /** Attempts the server closed before answering (see streamTimed). */
  retries: number;
}

export function makeAgent(maxSockets: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
}

interface ChunkJson {
  choices?: {
    delta?: { content?: string | null };
    logprobs?: { content?: unknown[] | null } | null;
    finish_reason?: string | null;
  }[];
  usage?: {
    completion_tokens?: number;
    prompt_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number };
  } | null;
  timings?: { cache_n?: number };
  error?: unknown;
}

/**
 * POSTs `body` (a stream: true request) and reads the SSE stream to its end. Never throws.
 * A connection the server closes before sending any response (llama-server's HTTP server does this to
 * some fresh and reused connections when clients reconnect quickly; curl, slower to reconnect, does not
 * see it) is retried at once, up to 3 times; the clock keeps running from the first attempt (the lost
 * milliseconds count against the server) and `retries` says how often it happened.
 */
export async function streamTimed(
  target: StreamTarget,
  body: unknown,
  agent: http.Agent,
  timeoutMs = 300_000,
  signal?: AbortSignal,
  onContent?: () => void,
): Promise<TimedStream> {
  const startedAt = performance.now();
  let r = await streamOnce(target, body, agent, timeoutMs, startedAt, signal, onContent);
  let retries = 0;
  while (!r.ok && r.status === 0 && !r.gotBytes && retries < 3 && performance.now() - startedAt < timeoutMs) {
    retries++;
    r = await streamOnce(target, body, agent, timeoutMs, startedAt, signal, onContent);
  }
  r.retries = retries;
  return r;
}

/** `signal` ends the stream early (error 'aborted'; what arrived until then is kept); `onContent` sees every content event. */
function streamOnce(
  target: StreamTarget,
  body: unknown,
  agent: http.Agent,
  timeoutMs: number,
  startedAt: number,
  signal?: AbortSignal,
  onContent?: () => void,
): Promise<TimedStream & { gotBytes: boolean }> {
  const url = new URL(target.path, target.baseUrl);
  const payload = Buffer.from(JSON.stringify(body));
  const r: TimedStream & { gotBytes: boolean } = {
    gotBytes: false,
    retries: 0,
    ok: false,
    status: 0,
    firstTokenMs: Number.NaN,
    gapsMs: [],
    gapTokens: [],
    totalMs: 0,
    contentEvents: 0,
    completionTokens: null,
    promptTokens: null,
    cachedTokens: null,
    finishReason: null,
    text: '',
    startedAt,
    endedAt: startedAt,
  };
  return new Promise((resolve) => {
    let settled = false;
    let lastContent = 0;
    let sawDone = false;
    const settle = (error?: string) => {
      if (settled) return;
      settled = true;
      r.endedAt = performance.now();
      r.totalMs = r.endedAt - startedAt;
      if (error !== undefined) r.error = error;
      r.ok = r.error === undefined && r.status === 200 && sawDone;
      if (!r.ok && r.error === undefined) r.error = sawDone ? `status ${r.status}` : 'stream ended without [DONE]';
      resolve(r);
    };
    const onEvent = (data: string) => {
      if (data === '[DONE]') {
        sawDone = true;
        return;
      }
      let json: ChunkJson;
      try {
        json = JSON.parse(data) as ChunkJson;
      } catch {
        r.error ??= `unparseable event: ${data.slice(0, 120)}`;
        return;
      }
      if (json.error !== undefined) {
        r.error = JSON.stringify(json.error).slice(0, 500);
        return;
      }
      const choice = json.choices?.[0];
      const content = choice?.delta?.content;
      if (typeof content === 'string' && content.length > 0) {
        const now = performance.now();
        if (r.contentEvents === 0) r.firstTokenMs = now - startedAt;
        else {
          r.gapsMs.push(now - lastContent);
          const tokens = choice?.logprobs?.content?.length;
          if (tokens !== undefined && tokens > 0) r.gapTokens.push(tokens);
        }
        lastContent = now;
        r.contentEvents++;
        r.text += content;
        onContent?.();
      }
      if (choice?.finish_reason) r.finishReason = choice.finish_reason;
      if (json.usage) {
        if (typeof json.usage.completion_tokens === 'number') r.completionTokens = json.usage.completion_tokens;
        if (typeof json.usage.prompt_tokens === 'number') r.promptTokens = json.usage.prompt_tokens;
        const cached = json.usage.prompt_tokens_details?.cached_tokens;
        if (typeof cached === 'number') r.cachedTokens = cached;
      }
      if (typeof json.timings?.cache_n === 'number' && r.cachedTokens === null) r.cachedTokens = json.timings.cache_n;
    };
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          accept: 'text/event-stream',
          ...target.headers,
        },
      },
      (res) => {
        r.status = res.statusCode ?? 0;
        r.gotBytes = true;
        res.setEncoding('utf8');
        let buf = '';
        let errorBody = '';
        res.on('data', (chunk: string) => {
          if (r.status !== 200) {
            errorBody += chunk;
            return;
          }
          buf += chunk;
          let idx: number;
          while ((idx = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, idx);
            buf = buf.slice(idx + 2);
            const lines = block
              .split('\n')
              .filter((l) => l.startsWith('data:'))
              .map((l) => l.slice(5).trimStart());
            if (lines.length) onEvent(lines.join('\n'));
          }
        });
        res.on('end', () => settle(r.status !== 200 ? `status ${r.status}: ${errorBody.slice(0, 300)}` : undefined));
        res.on('error', (e) => settle(e.message));
      },
    );
    req.setTimeout(timeoutMs, () => {
      req.destroy(new Error(`client time-out after ${timeoutMs} ms`));
    });
    req.on('error', (e) => settle(e.message));
    if (signal?.aborted) req.destroy(new Error('aborted'));
    signal?.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
    req.end(payload);
  });
}

/** A stream's generated tokens: the usage's count, else its content events. */
export function streamTokens(r: TimedStream): number {
  return r.completionTokens ?? r.contentEvents;
}

/** What every load level reports of its streams: counts, the first distinct errors, and tokens over the wall time. */
export interface StreamLoadSummary {
  requests: number;
  errors: number;
  errorSamples: string[];
  tokens: number;
  wallS: number;
  tokensPerSecond: number;
}

/** The summary of one level's streams, its wall time from `t0` (performance.now()) to the last stream's end. */
export function summarizeStreams(results: readonly TimedStream[], t0: number): StreamLoadSummary {
  const ok = results.filter((r) => r.ok);
  const bad = results.filter((r) => !r.ok);
  const tokens = ok.reduce((s, r) => s + streamTokens(r), 0);
  const wallS = (Math.max(...results.map((r) => r.endedAt)) - t0) / 1000;
  return {
    requests: results.length,
    errors: bad.length,
    errorSamples: [...new Set(bad.map((r) => r.error ?? `status ${r.status}`))].slice(0, 3),
    tokens,
    wallS,
    tokensPerSecond: tokens / wallS,
  };
}
