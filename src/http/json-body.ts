import { echoed, jsonTooDeep, loneSurrogate, malformedJson } from '../errors/index.ts';
import { REQUEST_LIMITS } from './request-limits.ts';

/**
 * Parses a request body as JSON: 400 `json_too_deep` past `maxDepth` levels of nesting (checked first, by a
 * linear scan with no recursion, so nothing downstream ever walks an unbounded depth), 400 `invalid_json`
 * when it is not JSON, 400 `invalid_unicode` naming the field when a string holds a lone surrogate (see
 * checkWellFormedText). An empty body parses as undefined (the route decides whether that is an error).
 */
export function parseJsonBody(bytes: Buffer, maxDepth: number = REQUEST_LIMITS.maxJsonDepth): unknown {
  if (bytes.length === 0) return undefined;
  const text = bytes.toString('utf8');
  if (nestingExceeds(text, maxDepth)) throw jsonTooDeep(maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw malformedJson(err instanceof Error ? err.message : 'parse error');
  }
  checkWellFormedText(text, value);
  return value;
}

/** A `\uD800`-`\uDFFF` escape: the only way a lone surrogate gets into parsed JSON (bytes decode to U+FFFD). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Throws 400 `invalid_unicode` naming the first string or key of `value` (JSON.parse of `text`) that holds a lone
 * UTF-16 surrogate. Such text has no UTF-8 form: the tokenizer would see U+FFFD, and a stored record (LMDB's
 * msgpack, PostgreSQL) would read back as other text than was sent. llama-server refuses it too. Costs one scan of
 * `text` unless it has a surrogate escape; then one walk of `value` (its depth is bounded by the parser's).
 */
export function checkWellFormedText(text: string, value: unknown): void {
  if (!SURROGATE_ESCAPE.test(text)) return;
  const path = loneSurrogatePath(value, '');
  if (path !== null) throw loneSurrogate(path === '' ? null : path);
}

function loneSurrogatePath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? path : null;
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = loneSurrogatePath(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, v] of Object.entries(value)) {
    const at = path === '' ? echoed(key) : `${path}.${echoed(key)}`;
    if (LONE_SURROGATE.test(key)) return path === '' ? '' : path;
    const found = loneSurrogatePath(v, at);
    if (found !== null) return found;
  }
  return null;
}

/** The character codes the nesting scan looks at. */
const enum Code {
  Quote = 0x22,
  Backslash = 0x5c,
  OpenArray = 0x5b,
  OpenObject = 0x7b,
  CloseArray = 0x5d,
  CloseObject = 0x7d,
}

/** Whether `[`/`{` outside strings nest deeper than `max`. Linear; malformed text is left to JSON.parse. */
export function nestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === Code.Quote) {
      // Skip the string: find the next quote not escaped by an odd run of backslashes.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q === -1) return false;
        let slashes = 0;
        for (let j = q - 1; text.charCodeAt(j) === Code.Backslash; j--) slashes++;
        i = q;
        if (slashes % 2 === 0) break;
      }
    } else if (c === Code.OpenArray || c === Code.OpenObject) {
      if (++depth > max) return true;
    } else if (c === Code.CloseArray || c === Code.CloseObject) {
      depth--;
    }
  }
  return false;
}
