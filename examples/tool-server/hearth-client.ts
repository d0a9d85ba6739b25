/**
 * A small client for Hearth's shared endpoint, `POST {baseUrl}/api/inference/v1/chat/completions`, always
 * streaming (service-spec 4.1 and 2.4: `data: <chunk>` events ending with `data: [DONE]`), with what the spec
 * asks callers to add: retries and time-outs.
 *
 * - Retries: 429, 502, 503 and 504 answers and connection failures, before any of the stream was read.
 *   A `Retry-After` is honoured (seconds or an HTTP date); without one, exponential backoff with jitter.
 *   At most `maxRetries` retries, never past the overall deadline, and a Retry-After longer than
 *   `maxRetryDelayMs` (a warming-up model says 120 s) fails at once, carrying the Retry-After to the caller.
 * - Time-outs: `timeoutMs` for the whole call (retries included) and `idleTimeoutMs` for any silence while
 *   waiting for headers or the next piece of the stream (Hearth sends `: keep-alive` comments at least every
 *   15 s during a long prompt, so a live stream is never silent that long).
 * Stateless apart from its options; one instance can serve concurrent calls.
 */
import { SseReader } from './sse-reader.ts';

export interface HearthClientOptions {
  /** The Hearth base URL, e.g. `https://hearth.example.com` (no trailing `/api/...`). */
  baseUrl: string;
  /** A Hearth API key, sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** The whole call, retries included. Defaults to 120 s. */
  timeoutMs?: number;
  /** Longest silence while waiting for headers or stream data. Defaults to 30 s. */
  idleTimeoutMs?: number;
  /** Retries after the first attempt. Defaults to 3. */
  maxRetries?: number;
  /** First backoff when no Retry-After is given; doubles per retry. Defaults to 500 ms. */
  baseRetryDelayMs?: number;
  /** Longest wait honoured between attempts; a longer Retry-After fails at once. Defaults to 10 s. */
  maxRetryDelayMs?: number;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
}

export const DEFAULT_HEARTH_CLIENT_OPTIONS = {
  timeoutMs: 120_000,
  idleTimeoutMs: 30_000,
  maxRetries: 3,
  baseRetryDelayMs: 500,
  maxRetryDelayMs: 10_000,
} satisfies Required<Omit<HearthClientOptions, 'baseUrl' | 'apiKey' | 'fetch'>>;

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface CompletionRequest {
  /** `<namespace>/<model_name>`, as listed by `GET /api/inference/v1/models`. */
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  max_tokens?: number;
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface CompletionResult {
  id: string | null;
  model: string;
  content: string;
  finish_reason: string | null;
  usage: CompletionUsage | null;
  /** 1 when the first attempt succeeded. */
  attempts: number;
}

export interface CompleteOptions {
  /** Cancels the call (e.g. the tool's ctx.signal); the rejection is the signal's reason. */
  signal?: AbortSignal;
  /** Called with each piece of content as it streams in. */
  onDelta?: (text: string) => void;
}

export type HearthErrorKind = 'http' | 'timeout' | 'network' | 'stream';

/** Why a call failed. `status` is Hearth's HTTP status for kind 'http', else null. */
export class HearthError extends Error {
  override name = 'HearthError';
  constructor(
    readonly kind: HearthErrorKind,
    message: string,
    readonly status: number | null = null,
    readonly code: string | null = null,
    /** Seconds, from Hearth's Retry-After, when it gave one. */
    readonly retryAfterSeconds: number | undefined = undefined,
  ) {
    super(message);
  }
}

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);

/** Milliseconds to wait from a Retry-After value (delta-seconds or an HTTP date); undefined if absent/invalid. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Hearth's error body is OpenAI's `{"error":{"message","code"}}`; accept a plain `{"error": "..."}` too. */
async function readError(response: Response): Promise<{ message: string; code: string | null }> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') return { message: body.error, code: null };
    if (typeof body.error === 'object' && body.error !== null) {
      const e = body.error as { message?: unknown; code?: unknown };
      return {
        message: typeof e.message === 'string' ? e.message : response.statusText,
        code: typeof e.code === 'string' ? e.code : null,
      };
    }
  } catch {
    // not JSON: fall through
  }
  return { message: text.slice(0, 200) || response.statusText || `HTTP ${response.status}`, code: null };
}

/** A timer that aborts its signal after `ms` of silence; `touch()` restarts it. */
class IdleWatch {
  readonly #controller = new AbortController();
  #timer: NodeJS.Timeout;
  constructor(readonly ms: number) {
    this.#timer = setTimeout(() => this.#fire(), ms);
  }
  get signal(): AbortSignal {
    return this.#controller.signal;
  }
  touch(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#fire(), this.ms);
  }
  dispose(): void {
    clearTimeout(this.#timer);
  }
  #fire(): void {
    this.#controller.abort(new HearthError('timeout', `Hearth sent nothing for ${this.ms} ms`));
  }
}

interface StreamState {
  id: string | null;
  model: string;
  content: string;
  finish_reason: string | null;
  usage: CompletionUsage | null;
}

export class HearthClient {
  readonly #options: Required<Omit<HearthClientOptions, 'fetch'>>;
  readonly #fetch: typeof fetch;
  readonly #url: string;

  constructor(options: HearthClientOptions) {
    if (!options.baseUrl) throw new TypeError('baseUrl is required');
    if (!options.apiKey) throw new TypeError('apiKey is required');
    const merged = { ...DEFAULT_HEARTH_CLIENT_OPTIONS };
    for (const [k, v] of Object.entries(options))
      if (v !== undefined && k in merged) (merged as Record<string, unknown>)[k] = v;
    this.#options = { ...merged, baseUrl: options.baseUrl, apiKey: options.apiKey };
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}/api/inference/v1/chat/completions`;
  }

  async complete(request: CompletionRequest, options: CompleteOptions = {}): Promise<CompletionResult> {
    const { timeoutMs, maxRetries, baseRetryDelayMs, maxRetryDelayMs } = this.#options;
    const deadline = Date.now() + timeoutMs;
    const overall = new AbortController();
    const overallTimer = setTimeout(
      () => overall.abort(new HearthError('timeout', `Hearth did not finish within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const signal = options.signal ? AbortSignal.any([overall.signal, options.signal]) : overall.signal;
    const body = JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } });
    try {
      for (let attempt = 1; ; attempt++) {
        const idle = new IdleWatch(this.#options.idleTimeoutMs);
        const attemptSignal = AbortSignal.any([signal, idle.signal]);
        try {
          let response: Response;
          try {
            response = await this.#fetch(this.#url, {
              method: 'POST',
              headers: {
                authorization: `Bearer ${this.#options.apiKey}`,
                'content-type': 'application/json',
                accept: 'text/event-stream',
              },
              body,
              signal: attemptSignal,
            });
          } catch (err) {
            if (attemptSignal.aborted) throw attemptSignal.reason;
            const retryIn = baseRetryDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
            if (attempt > maxRetries || Date.now() + retryIn > deadline) {
              throw new HearthError(
                'network',
                `Could not reach Hearth: ${err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err)}`,
              );
            }
            idle.dispose();
            await sleep(retryIn, signal);
            continue;
          }
          if (response.ok)
            return {
              ...(await this.#read(response, idle, attemptSignal, request.model, options.onDelta)),
              attempts: attempt,
            };

          const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
          const { message, code } = await readError(response);
          const retryAfterSeconds = retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000);
          const failure = new HearthError(
            'http',
            `Hearth answered ${response.status}: ${message}`,
            response.status,
            code,
            retryAfterSeconds,
          );
          if (!RETRYABLE_STATUS.has(response.status) || attempt > maxRetries) throw failure;
          const wait = retryAfterMs ?? baseRetryDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
          if (wait > maxRetryDelayMs || Date.now() + wait > deadline) throw failure;
          idle.dispose();
          await sleep(wait, signal);
        } finally {
          idle.dispose();
        }
      }
    } finally {
      clearTimeout(overallTimer);
    }
  }

  /** Reads a 200 answer: the SSE stream, or a plain JSON completion if the server did not stream. */
  async #read(
    response: Response,
    idle: IdleWatch,
    signal: AbortSignal,
    model: string,
    onDelta?: (text: string) => void,
  ): Promise<StreamState> {
    const state: StreamState = { id: null, model, content: '', finish_reason: null, usage: null };
    const type = response.headers.get('content-type') ?? '';
    if (type.includes('application/json')) {
      const json = (await response.json()) as {
        id?: string;
        model?: string;
        choices?: Array<{ message?: { content?: string }; finish_reason?: string }>;
        usage?: CompletionUsage;
      };
      const choice = json.choices?.[0];
      return {
        id: json.id ?? null,
        model: json.model ?? model,
        content: choice?.message?.content ?? '',
        finish_reason: choice?.finish_reason ?? null,
        usage: json.usage ?? null,
      };
    }
    if (!response.body) throw new HearthError('stream', 'Hearth answered 200 without a body');
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const sse = new SseReader();
    let finished = false;
    const onAbort = () => void reader.cancel(signal.reason).catch(() => {});
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!finished) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          throw new HearthError(
            'stream',
            `The stream from Hearth broke: ${err instanceof Error ? err.message : String(err)}`,
          );
        }
        if (signal.aborted) throw signal.reason;
        if (!next.done) idle.touch();
        const events = next.done
          ? [...sse.push(decoder.decode()), ...sse.end()]
          : sse.push(decoder.decode(next.value, { stream: true }));
        for (const event of events) {
          if (event.data === '[DONE]') {
            finished = true;
            break;
          }
          this.#apply(state, event.data, onDelta);
        }
        if (next.done) break;
      }
      if (!finished) throw new HearthError('stream', 'The stream from Hearth ended before [DONE]');
      return state;
    } finally {
      signal.removeEventListener('abort', onAbort);
      await reader.cancel().catch(() => {}); // after [DONE] or a failure: release the connection either way
    }
  }

  #apply(state: StreamState, data: string, onDelta?: (text: string) => void): void {
    let chunk: {
      id?: string;
      model?: string;
      error?: { message?: string; code?: string | null } | string;
      choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null }>;
      usage?: CompletionUsage | null;
    };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      throw new HearthError('stream', 'Hearth sent an event that is not JSON');
    }
    if (chunk.error !== undefined) {
      const e = chunk.error;
      throw new HearthError(
        'stream',
        `Hearth failed mid-stream: ${typeof e === 'string' ? e : (e.message ?? 'unknown error')}`,
        null,
        typeof e === 'object' ? (e.code ?? null) : null,
      );
    }
    state.id ??= chunk.id ?? null;
    if (chunk.model) state.model = chunk.model;
    const choice = chunk.choices?.[0];
    const text = choice?.delta?.content;
    if (text) {
      state.content += text;
      onDelta?.(text);
    }
    if (choice?.finish_reason) state.finish_reason = choice.finish_reason;
    if (chunk.usage) state.usage = chunk.usage;
  }
}
