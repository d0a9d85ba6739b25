import { invalidRequest } from '../errors/index.ts';

/** A parsed JSON object (a request body or one of its members), its values still unchecked. */
export type Json = Record<string, unknown>;

/** Whether `v` is a JSON object (not null, not an array). */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a field counts as not sent: absent or null (OpenAI's SDKs send null for "default"). */
export const absent = (v: unknown): v is undefined | null => v === undefined || v === null;

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
