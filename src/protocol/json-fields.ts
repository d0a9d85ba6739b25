import { type ApiError, invalidRequest } from '../errors/index.ts';

/** A parsed JSON object (a request body or one of its members), its values still unchecked. */
export type Json = Record<string, unknown>;

/** Whether `v` is a JSON object (not null, not an array). */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a field counts as not sent: absent or null (OpenAI's SDKs send null for "default"). */
export const absent = (v: unknown): v is undefined | null => v === undefined || v === null;

/** The 400 of a required field that is not sent (missing_required_parameter) or not of its type (invalid_type). */
export function requiredFieldError(message: string, param: string, value: unknown): ApiError {
  return invalidRequest(message, param, absent(value) ? 'missing_required_parameter' : 'invalid_type');
}

const isTokenId = (t: unknown): t is number =>
  typeof t === 'number' && Number.isInteger(t) && t >= 0 && t <= 0xffffffff;

/** A prompt or input given as token ids: a non-empty list of integers in 0..2^32-1; 400 naming `param` otherwise. */
export function tokenIds(list: unknown[], param: string): number[] {
  if (list.length === 0) throw invalidRequest(`'${param}' must not be empty`, param, 'empty_array');
  list.forEach((t, j) => {
    if (!isTokenId(t))
      throw invalidRequest(`'${param}[${j}]' must be a token id (an integer >= 0)`, `${param}[${j}]`, 'invalid_type');
  });
  return list as number[];
}

/**
 * A list of prompts, `prompt` of Completions or `input` of Embeddings: a string, an array of strings, an array of
 * token ids (one prompt), or an array of token-id arrays (strings among them too, as llama-server takes it); at most `max` of them (`noun`: what the limit's message
 * calls them). `text` checks each string (Embeddings refuses an empty one). A 400 naming the field otherwise.
 */
export function promptList(
  raw: unknown,
  param: string,
  limit: { max: number; noun: string },
  text: (s: string, param: string) => string = (s) => s,
): Array<string | number[]> {
  if (raw === undefined) throw invalidRequest(`'${param}' is required`, param, 'missing_required_parameter');
  if (typeof raw === 'string') return [text(raw, param)];
  const shape = `'${param}' must be a string, an array of strings, an array of token ids or an array of token-id arrays`;
  if (!Array.isArray(raw)) throw invalidRequest(shape, param, 'invalid_type');
  if (raw.length === 0) throw invalidRequest(`'${param}' must not be empty`, param, 'empty_array');
  if (typeof raw[0] === 'number') return [tokenIds(raw, param)];
  if (raw.length > limit.max)
    throw invalidRequest(
      `'${param}' holds ${raw.length} ${limit.noun}; the limit is ${limit.max}`,
      param,
      'invalid_value',
    );
  return raw.map((p, i) => {
    if (typeof p === 'string') return text(p, `${param}[${i}]`);
    if (Array.isArray(p)) return tokenIds(p, `${param}[${i}]`);
    throw invalidRequest(shape, `${param}[${i}]`, 'invalid_type');
  });
}

/**
 * `stream_options` of the Chat Completions and Completions APIs: absent, or an object allowed only when `stream` is
 * true, whose `include_usage` (a boolean) asks for a final usage chunk. Returns include_usage; a 400 otherwise.
 */
export function parseIncludeUsage(body: Json, stream: boolean): boolean {
  const so = body.stream_options;
  if (absent(so)) return false;
  if (!isObject(so)) throw invalidRequest("'stream_options' must be an object", 'stream_options', 'invalid_type');
  if (!stream)
    throw invalidRequest("'stream_options' is only allowed when 'stream' is true", 'stream_options', 'invalid_value');
  if (so.include_usage !== undefined && typeof so.include_usage !== 'boolean')
    throw invalidRequest(
      "'stream_options.include_usage' must be a boolean",
      'stream_options.include_usage',
      'invalid_type',
    );
  return so.include_usage === true;
}

/** `body[field]` as a number in [min, max] (an integer where `integer`); undefined when not sent; a 400 naming it otherwise. */
export function optionalNumber(
  body: Json,
  field: string,
  min: number,
  max: number,
  integer = false,
): number | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw invalidRequest(`'${field}' must be a number`, field, 'invalid_type');
  if (integer && !Number.isInteger(v)) throw invalidRequest(`'${field}' must be an integer`, field, 'invalid_type');
  if (v < min || v > max)
    throw invalidRequest(`'${field}' must be between ${min} and ${max}, got ${v}`, field, 'invalid_value');
  return v;
}

/** `body[field]` as a boolean; undefined when not sent; a 400 naming it otherwise. */
export function optionalBoolean(body: Json, field: string): boolean | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== 'boolean') throw invalidRequest(`'${field}' must be a boolean`, field, 'invalid_type');
  return v;
}

/** OpenAI's bounds on `metadata`: 16 keys of at most 64 characters, each a string of at most 512. */
export const METADATA_LIMITS = { maxKeys: 16, maxKeyLength: 64, maxValueLength: 512 } as const;

/**
 * OpenAI's `metadata` (chat, completions, Responses, Batch API): an object of strings within METADATA_LIMITS;
 * null when not sent; a 400 naming the field, or the key at fault, otherwise ('__proto__' included: see below).
 */
export function parseMetadata(raw: unknown, param = 'metadata'): Record<string, string> | null {
  if (absent(raw)) return null;
  if (!isObject(raw)) throw invalidRequest(`'${param}' must be an object of strings`, param, 'invalid_type');
  const entries = Object.entries(raw);
  const { maxKeys, maxKeyLength, maxValueLength } = METADATA_LIMITS;
  if (entries.length > maxKeys)
    throw invalidRequest(`'${param}' holds ${entries.length} keys; at most ${maxKeys}`, param, 'invalid_value');
  for (const [key, value] of entries) {
    if (key.length > maxKeyLength)
      throw invalidRequest(`'${param}' keys are at most ${maxKeyLength} characters`, param, 'invalid_value');
    // Stored (a Response, a batch): LMDB's msgpack reads the key '__proto__' back as '__proto_', another key.
    if (key === '__proto__')
      throw invalidRequest(`'${param}' may not have the key '__proto__'`, param, 'invalid_value');
    const at = `${param}.${key}`;
    if (typeof value !== 'string') throw invalidRequest(`'${at}' must be a string`, at, 'invalid_type');
    if (value.length > maxValueLength)
      throw invalidRequest(`'${at}' is longer than ${maxValueLength} characters`, at, 'invalid_value');
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** OpenAI's `service_tier` values; accepted without effect (one tier here). */
const SERVICE_TIERS: ReadonlySet<unknown> = new Set(['auto', 'default', 'flex', 'scale', 'priority']);

/** Checks `service_tier` (chat, completions, Responses): absent, null or one of OpenAI's values; a 400 otherwise. */
export function checkServiceTier(raw: unknown): void {
  if (absent(raw) || SERVICE_TIERS.has(raw)) return;
  throw invalidRequest(
    `'service_tier' must be one of ${[...SERVICE_TIERS].join(', ')}`,
    'service_tier',
    typeof raw === 'string' ? 'invalid_value' : 'invalid_type',
  );
}
