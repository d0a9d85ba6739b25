import type { ChatDelta } from '../protocol/chat-delta.ts';
import type { ChatRequest } from '../protocol/chat-request.ts';

/**
 * The upstream-provider face of Hearth: per-workspace inference projects proxy chat completions to one
 * of four vendors. Every provider speaks the vendor's own wire format with plain `fetch` (no vendor
 * SDKs) and shares one retry / time-out / abort policy (upstream-fetch.ts). Providers are stateless and
 * safe to share between concurrent calls; they run on the main thread.
 */
export type ProviderName = 'openai' | 'anthropic' | 'gemini' | 'mistral';

export const PROVIDER_NAMES: readonly ProviderName[] = Object.freeze([
  'openai',
  'anthropic',
  'gemini',
  'mistral',
] as const);

export function isProviderName(value: unknown): value is ProviderName {
  return typeof value === 'string' && (PROVIDER_NAMES as readonly string[]).includes(value);
}

/** The real vendor endpoints. Configuration, not constants: tests point providers at local fakes. */
export const DEFAULT_PROVIDER_BASE_URLS: Readonly<Record<ProviderName, string>> = Object.freeze({
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
  gemini: 'https://generativelanguage.googleapis.com',
  mistral: 'https://api.mistral.ai/v1',
});

/** One upstream call. Owned by the caller (the gateway) for the duration of complete()/stream(). */
export interface ProviderCall {
  /** The validated request. `request.model` is ignored: `model` is used. */
  request: ChatRequest;
  /** The project's upstream model name; also the `model` of every object returned. */
  model: string;
  /** Decrypted provider key. Never logged, never part of an error message (upstream text is scrubbed). */
  apiKey: string;
  /** The project's stored temperature; applies when `request.temperature` is undefined. */
  defaultTemperature?: number | undefined;
  /** Client gone -> the upstream fetch, the body read and any retry wait are cancelled at once. */
  signal: AbortSignal;
}

export interface ChatProvider {
  readonly name: ProviderName;
  /**
   * One answer as ChatDeltas: content and tool-call fragments (each call's first fragment with id and name,
   * indices 0-based in order), then exactly one finish (with usage when the vendor reported it), then the
   * iterable ends. The vendor's streaming API is used when `call.request.stream`, its JSON API otherwise
   * (the deltas are the same). Nothing is yielded before the upstream answered 2xx, so an early failure is
   * thrown before any delta. Failures are thrown as ApiErrors (mapped per README.md "Upstream providers",
   * their text scrubbed of the call's key); the caller's abort throws an AbortError; the call's deadline
   * (`deadlineMs`, the whole answer) a 504. Stopping iteration early cancels the upstream request.
   */
  chat(call: ProviderCall): AsyncIterable<ChatDelta>;
}

export interface ProviderOptions {
  /** The vendor's base URL. Defaults to '' meaning DEFAULT_PROVIDER_BASE_URLS[name]. */
  baseUrl: string;
  /** Per attempt: time from sending the request to the response headers. Defaults to 60_000. */
  timeoutMs: number;
  /** Per attempt: longest silence while reading a body (JSON bytes or stream events). Defaults to 60_000. */
  idleTimeoutMs: number;
  /**
   * Per call: the whole answer, retries and waits included, from the request to the last byte. An upstream
   * that trickles bytes or streams keep-alive comments forever is cut here (504 `deadline_exceeded`) and
   * its request aborted. Defaults to 300_000.
   */
  deadlineMs: number;
  /** Retries after the first attempt for 408/409/429/5xx and network errors before the answer. Defaults to 2. */
  maxRetries: number;
  /** Backoff for attempt n (0-based) is min(base * 2^n, maxRetryDelayMs) minus up to 25 % jitter. Defaults to 500. */
  retryBaseDelayMs: number;
  /**
   * Cap on any single wait. An upstream Retry-After longer than this is not waited for: the failure is
   * returned at once, carrying the upstream hint. Defaults to 10_000.
   */
  maxRetryDelayMs: number;
  /** Whether an attempt that hit timeoutMs is retried (a stalled upstream rarely recovers quickly). Defaults to false. */
  retryOnTimeout: boolean;
  /** Cap on a JSON response body and on one stream event. Defaults to 8 MiB. */
  maxResponseBytes: number;
  /** Anthropic requires max_tokens; used when the request has none. Defaults to 4096. */
  anthropicDefaultMaxTokens: number;
  /** The `anthropic-version` header. Defaults to '2023-06-01'. */
  anthropicVersion: string;
}

export const DEFAULT_PROVIDER_OPTIONS = Object.freeze({
  baseUrl: '',
  timeoutMs: 60_000,
  idleTimeoutMs: 60_000,
  deadlineMs: 300_000,
  maxRetries: 2,
  retryBaseDelayMs: 500,
  maxRetryDelayMs: 10_000,
  retryOnTimeout: false,
  maxResponseBytes: 8 * 1024 * 1024,
  anthropicDefaultMaxTokens: 4096,
  anthropicVersion: '2023-06-01',
}) satisfies Required<ProviderOptions>;

/** Options after defaults and validation; `baseUrl` is absolute and has no trailing slash. */
export type ResolvedProviderOptions = Readonly<Required<ProviderOptions>>;

/** Applies defaults and validates once, at construction. Throws a TypeError naming the bad option. */
export function resolveProviderOptions(
  name: ProviderName,
  options: Partial<ProviderOptions> = {},
): ResolvedProviderOptions {
  const merged: Required<ProviderOptions> = { ...DEFAULT_PROVIDER_OPTIONS };
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined) (merged as unknown as Record<string, unknown>)[key] = value;
  }
  const baseUrl = (merged.baseUrl || DEFAULT_PROVIDER_BASE_URLS[name]).replace(/\/+$/, '');
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new TypeError(`provider ${name}: baseUrl '${baseUrl}' is not a valid URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TypeError(`provider ${name}: baseUrl must be http(s)`);
  const positive = [
    'timeoutMs',
    'idleTimeoutMs',
    'deadlineMs',
    'maxResponseBytes',
    'anthropicDefaultMaxTokens',
  ] as const;
  for (const key of positive) {
    if (!Number.isFinite(merged[key]) || merged[key] <= 0)
      throw new TypeError(`provider ${name}: ${key} must be a positive number`);
  }
  const nonNegative = ['retryBaseDelayMs', 'maxRetryDelayMs'] as const;
  for (const key of nonNegative) {
    if (!Number.isFinite(merged[key]) || merged[key] < 0) throw new TypeError(`provider ${name}: ${key} must be >= 0`);
  }
  if (!Number.isInteger(merged.maxRetries) || merged.maxRetries < 0)
    throw new TypeError(`provider ${name}: maxRetries must be an integer >= 0`);
  if (typeof merged.retryOnTimeout !== 'boolean')
    throw new TypeError(`provider ${name}: retryOnTimeout must be a boolean`);
  if (typeof merged.anthropicVersion !== 'string' || merged.anthropicVersion === '')
    throw new TypeError(`provider ${name}: anthropicVersion must be a non-empty string`);
  return Object.freeze({ ...merged, baseUrl });
}
