import { invalidRequest } from '../errors/index.ts';

/**
 * Readers of JSON request bodies shared by the management features: raw JSON in, typed fields out. Every 400
 * names the field in `param`; unknown fields are refused (never silently dropped). Pure.
 */
export type Json = Record<string, unknown>;

/** The longest name of a key, workspace, project or app. */
export const MAX_NAME = 200;
/**
 * A lone UTF-16 surrogate (JSON `"\ud800"`) has no UTF-8 form: stored, it would read back as other text
 * than was acknowledged (and hash like other passwords), so text with one is refused.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

export function wellFormed(v: string, field: string): void {
  if (LONE_SURROGATE.test(v))
    throw invalidRequest(`'${field}' is not valid Unicode text (it has a lone surrogate)`, field, 'invalid_value');
}

export function object(body: unknown): Json {
  if (body === undefined) throw invalidRequest('Request body is required', null, 'missing_body');
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalidRequest('Request body must be a JSON object', null, 'invalid_type');
  return body as Json;
}

export function onlyFields(body: Json, allowed: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key))
      throw invalidRequest(`Unrecognized field: ${key} (allowed: ${allowed.join(', ')})`, key, 'unknown_parameter');
  }
}

export function text(body: Json, field: string, max: number, pattern?: RegExp, what = 'characters'): string {
  const v = body[field];
  if (v === undefined || v === null)
    throw invalidRequest(`'${field}' is required`, field, 'missing_required_parameter');
  if (typeof v !== 'string') throw invalidRequest(`'${field}' must be a string`, field, 'invalid_type');
  wellFormed(v, field);
  const t = v.trim();
  if (t.length === 0) throw invalidRequest(`'${field}' must not be empty`, field, 'invalid_value');
  if (t.length > max) throw invalidRequest(`'${field}' must be at most ${max} characters`, field, 'invalid_value');
  if (pattern && !pattern.test(t))
    throw invalidRequest(`'${field}' contains ${what} that are not allowed`, field, 'invalid_value');
  return t;
}

/**
 * A PATCH field: absent keeps the value. `null` is read only where it has a meaning (`nullable`: clears or
 * lifts it); elsewhere the field is present with the wrong type, a 400 invalid_type naming it.
 */
export function optional<T>(body: Json, field: string, read: () => T, nullable = false): T | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (v === null && !nullable)
    throw invalidRequest(`'${field}' cannot be null (leave it out to keep its value)`, field, 'invalid_type');
  return read();
}
