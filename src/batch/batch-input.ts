import { ApiError } from '../errors/index.ts';
import { checkWellFormedText, nestingExceeds } from '../http/json-body.ts';
import { REQUEST_LIMITS } from '../http/request-limits.ts';
import type { BatchError, BatchLine } from './batch-records.ts';

/** What a batch's input file holds: its lines once every one is well-formed, else the errors naming them. */
export interface InputCheck {
  lines: number;
  errors: BatchError[];
}

/** At most this many errors are reported (the rest are alike). */
const MAX_ERRORS = 100;

/**
 * Reads a JSONL input file chunk by chunk (never whole) and checks each line as OpenAI's Batch API does: a JSON
 * object {custom_id: a unique non-empty string, method: "POST", url: the batch's endpoint, body: an object}; blank
 * lines are skipped (and counted for the line numbers). Well-formed lines go to `emit` in groups (until the first
 * error: then only errors are collected). A line over `lineLimit` bytes (the synchronous routes' body limit) is an
 * error. Line numbers are 1-based.
 */
export async function checkInput(
  chunks: AsyncIterable<Buffer>,
  endpoint: string,
  lineLimit: number,
  emit: (lines: BatchLine[]) => Promise<void>,
): Promise<InputCheck> {
  const errors: BatchError[] = [];
  const seen = new Set<string>();
  let group: BatchLine[] = [];
  let lineNo = 0;
  let index = 0;
  let carry: Buffer[] = [];
  let carried = 0;
  let tooLong = false;
  const fail = (message: string, param: string | null, code = 'invalid_request') => {
    if (errors.length < MAX_ERRORS) errors.push({ code, message: `Line ${lineNo}: ${message}`, param, line: lineNo });
  };
  const line = async (bytes: Buffer) => {
    lineNo++;
    const text = bytes.toString('utf8').trim();
    if (text === '') return;
    const problem = lineProblem(text, endpoint, seen);
    if (problem !== null) return fail(problem.message, problem.param, problem.code);
    if (errors.length > 0) return;
    const o = JSON.parse(text) as { custom_id: string; body: unknown };
    group.push({ index: index++, customId: o.custom_id, body: JSON.stringify(o.body) });
    if (group.length >= 1000) {
      await emit(group);
      group = [];
    }
  };
  for await (const chunk of chunks) {
    let from = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, from)) {
      const piece = chunk.subarray(from, nl);
      from = nl + 1;
      if (tooLong || carried + piece.length > lineLimit) {
        lineNo++;
        fail(`the line is longer than ${lineLimit} bytes`, null, 'line_too_long');
      } else await line(carry.length === 0 ? piece : Buffer.concat([...carry, piece]));
      carry = [];
      carried = 0;
      tooLong = false;
    }
    const rest = chunk.subarray(from);
    if (!tooLong && carried + rest.length > lineLimit) {
      tooLong = true;
      carry = [];
    }
    if (!tooLong && rest.length > 0) {
      carry.push(Buffer.from(rest));
      carried += rest.length;
    }
  }
  if (tooLong) {
    lineNo++;
    fail(`the line is longer than ${lineLimit} bytes`, null, 'line_too_long');
  } else if (carried > 0) await line(Buffer.concat(carry));
  if (errors.length === 0 && index === 0)
    errors.push({ code: 'empty_file', message: 'The input file holds no requests', param: null, line: null });
  if (errors.length === 0 && group.length > 0) await emit(group);
  return { lines: index, errors };
}

function lineProblem(
  text: string,
  endpoint: string,
  seen: Set<string>,
): { message: string; param: string | null; code?: string } | null {
  // The synchronous routes' bound, plus the line's own object: past it JSON.stringify of the body overflows the stack.
  if (nestingExceeds(text, REQUEST_LIMITS.maxJsonDepth + 1))
    return {
      message: `the request body is nested deeper than ${REQUEST_LIMITS.maxJsonDepth} levels`,
      param: 'body',
      code: 'json_too_deep',
    };
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return { message: 'not valid JSON', param: null };
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { message: 'not a JSON object', param: null };
  try {
    checkWellFormedText(text, o); // a custom_id is stored as text: a lone surrogate would come back as another id
  } catch (err) {
    if (err instanceof ApiError) return { message: err.message, param: err.param };
    throw err;
  }
  const r = o as Record<string, unknown>;
  if (typeof r.custom_id !== 'string' || r.custom_id === '' || r.custom_id.length > 512)
    return { message: "'custom_id' must be a non-empty string (at most 512 characters)", param: 'custom_id' };
  if (seen.has(r.custom_id))
    return { message: `'custom_id' ${JSON.stringify(r.custom_id)} is used twice`, param: 'custom_id' };
  seen.add(r.custom_id);
  if (r.method !== 'POST') return { message: "'method' must be 'POST'", param: 'method' };
  if (r.url !== endpoint) return { message: `'url' must be the batch's endpoint, ${endpoint}`, param: 'url' };
  if (typeof r.body !== 'object' || r.body === null || Array.isArray(r.body))
    return { message: "'body' must be a JSON object", param: 'body' };
  return null;
}
