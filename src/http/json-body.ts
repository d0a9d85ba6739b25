import { jsonTooDeep, malformedJson } from '../errors/index.ts';
import { REQUEST_LIMITS } from './request-limits.ts';

/**
 * Parses a request body as JSON: 400 `json_too_deep` past `maxDepth` levels of nesting (checked first, by a
 * linear scan with no recursion, so nothing downstream ever walks an unbounded depth), 400 `invalid_json`
 * when it is not JSON. An empty body parses as undefined (the route decides whether that is an error).
 */
export function parseJsonBody(bytes: Buffer, maxDepth: number = REQUEST_LIMITS.maxJsonDepth): unknown {
  if (bytes.length === 0) return undefined;
  const text = bytes.toString('utf8');
  if (nestingExceeds(text, maxDepth)) throw jsonTooDeep(maxDepth);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw malformedJson(err instanceof Error ? err.message : 'parse error');
  }
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
