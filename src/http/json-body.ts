import { malformedJson } from '../errors/index.ts';
import type { HttpExchange } from './http-exchange.ts';

/**
 * Reads and parses a JSON body (size-capped: 413). Must be called synchronously in the handler, before
 * its first await. Malformed JSON is a 400 `invalid_json`; an empty body parses as undefined.
 */
export async function readJsonBody(ex: HttpExchange, limit: number): Promise<unknown> {
  const bytes = await ex.readBody(limit);
  if (bytes.length === 0) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw malformedJson(err instanceof Error ? err.message : 'parse error');
  }
}
