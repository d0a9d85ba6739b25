import type { ApiError } from '../errors/api-error.ts';
import { invalidRequest, upstreamError, upstreamRateLimited } from '../errors/errors.ts';
import { isRetryableStatus, parseProtoDurationMs } from './retry-policy.ts';
import type { SecretScrubber } from './secret-scrubber.ts';

/**
 * Turns an upstream error response (any of the four vendors' error bodies) into the one ApiError the
 * client sees. Upstream text passes the call's SecretScrubber (before truncation, so no key fragment
 * survives a cut) before it is put in a message: vendors echo keys (OpenAI's 401 shows a masked key).
 *
 * Policy (README.md "Upstream providers"):
 *   401 / 403, or Gemini's 400 API_KEY_INVALID -> 502 upstream_error naming the provider (the project's key is bad, not the caller's token)
 *   400 / 413 / 422                           -> 400 invalid_request_error carrying the provider's message
 *   429 after the last retry                  -> 429 rate_limit_error `upstream_rate_limited`, Retry-After passed on
 *   429 insufficient_quota (OpenAI billing)   -> 502 at once: retrying cannot help
 *   404 (unknown model), 5xx, anything else   -> 502 upstream_error, code = the provider's status
 */

/** What Hearth reads from a vendor error body. */
export interface UpstreamErrorInfo {
  /** The vendor's message, scrubbed and truncated. */
  message: string;
  /** An OpenAI-style machine code when the vendor gives one (`context_length_exceeded`, ...). */
  code: string | null;
  /** The request field the vendor blames, when it says (OpenAI / Mistral `param`). */
  param: string | null;
  /** The vendor refused the API key (401/403 or Gemini's API_KEY_INVALID). */
  keyRejected: boolean;
  /** A 429 that no wait can fix (OpenAI `insufficient_quota`). */
  quotaExhausted: boolean;
  /** A retry hint carried in the body (Gemini's google.rpc.RetryInfo), in ms. */
  retryAfterMs?: number | undefined;
}

const MAX_MESSAGE_CHARS = 500;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Text of a message that may be a string, a FastAPI `detail` list (Mistral 422) or some other JSON. */
function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value || undefined;
  if (Array.isArray(value)) {
    const parts = value.map((d) =>
      isObject(d)
        ? [Array.isArray(d.loc) ? d.loc.join('.') : '', str(d.msg) ?? ''].filter(Boolean).join(': ')
        : String(d),
    );
    return parts.filter(Boolean).join('; ') || undefined;
  }
  if (isObject(value)) return textOf(value.detail) ?? textOf(value.message) ?? JSON.stringify(value);
  return undefined;
}

/** Reads an error body of any vendor. Never throws; `bodyText` may be empty or not JSON. */
export function parseUpstreamErrorBody(status: number, bodyText: string, scrubber: SecretScrubber): UpstreamErrorInfo {
  let json: unknown;
  try {
    json = JSON.parse(bodyText);
  } catch {
    json = undefined;
  }
  if (Array.isArray(json)) json = json[0]; // Gemini's JSON-array stream framing wraps errors too
  const body: Json = isObject(json) ? json : {};
  const err: Json | undefined = isObject(body.error) ? body.error : undefined;

  const raw =
    textOf(err?.message) ??
    textOf(body.message) ??
    textOf(body.detail) ??
    str(body.error) ??
    (json === undefined && bodyText.trim() !== '' ? bodyText.trim() : undefined) ??
    `HTTP ${status}`;
  let message = scrubber.scrub(raw.replace(/\s+/g, ' '));
  if (message.length > MAX_MESSAGE_CHARS) message = `${message.slice(0, MAX_MESSAGE_CHARS)}...`;

  const code = str(err?.code) ?? str(body.code) ?? null;
  const param = str(err?.param) ?? str(body.param) ?? null;
  const details = Array.isArray(err?.details) ? (err.details as unknown[]).filter(isObject) : [];
  const apiKeyInvalid = details.some((d) => d.reason === 'API_KEY_INVALID');
  const retryInfo = details.find(
    (d) => typeof d['@type'] === 'string' && (d['@type'] as string).endsWith('google.rpc.RetryInfo'),
  );

  return {
    message,
    code: code !== null && /^[a-z][a-z0-9_]{0,63}$/.test(code) ? code : null,
    param: param !== null ? scrubber.scrub(param) : null,
    keyRejected: status === 401 || status === 403 || apiKeyInvalid,
    quotaExhausted: status === 429 && code === 'insufficient_quota',
    retryAfterMs: parseProtoDurationMs(retryInfo?.retryDelay),
  };
}

/** Whether another attempt may help. */
export function isRetryableFailure(status: number, info: UpstreamErrorInfo): boolean {
  return isRetryableStatus(status) && !info.keyRejected && !info.quotaExhausted;
}

/** The error a client sees for a failed upstream response (after the last retry, or a non-retryable one). */
export function upstreamFailureToApiError(
  provider: string,
  status: number,
  info: UpstreamErrorInfo,
  retryAfterMs?: number,
): ApiError {
  if (info.keyRejected)
    return upstreamError(provider, status, `the project's provider API key was rejected: ${info.message}`);
  if (status === 400 || status === 413 || status === 422) {
    return invalidRequest(
      `Upstream provider ${provider} rejected the request: ${info.message}`,
      info.param,
      info.code ?? 'upstream_invalid_request',
    );
  }
  if (status === 429 && !info.quotaExhausted) {
    return upstreamRateLimited(
      provider,
      info.message,
      retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(retryAfterMs / 1000)),
    );
  }
  return upstreamError(provider, status, info.message);
}
