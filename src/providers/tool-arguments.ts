import { invalidRequest } from '../errors/errors.ts';
import type { ChatMessage } from '../protocol/chat-request.ts';

/**
 * Pieces of tool-call translation every vendor that takes arguments as a JSON object needs (Anthropic
 * `tool_use.input`, Gemini `functionCall.args`): the arguments of an assistant's call parsed back into an
 * object, and the function name a `tool` message answers (vendors other than OpenAI key results by name).
 */

/** Deepest nesting Hearth re-serializes from client JSON text (JSON.stringify recurses: deeper input would overflow the stack). */
export const MAX_ARGUMENT_DEPTH = 64;

/** The deepest `[` / `{` nesting of JSON text, strings skipped; linear, no recursion. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92)
        i++; // backslash: skip the escaped character
      else if (ch === 34) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 123 || ch === 91) max = Math.max(max, ++depth);
    else if (ch === 125 || ch === 93) depth--;
  }
  return max;
}

/** The call's JSON arguments as an object; anything else (or nesting deeper than MAX_ARGUMENT_DEPTH) is a 400 naming the field. */
export function argumentsObject(args: string, param: string, provider: string): Record<string, unknown> {
  if (jsonDepth(args) > MAX_ARGUMENT_DEPTH)
    throw invalidRequest(`'${param}' is nested deeper than ${MAX_ARGUMENT_DEPTH} levels`, param, 'invalid_value');
  let value: unknown;
  try {
    value = args.trim() === '' ? {} : JSON.parse(args);
  } catch {
    throw invalidRequest(`'${param}' must be valid JSON for provider ${provider}`, param, 'invalid_value');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidRequest(`'${param}' must be a JSON object for provider ${provider}`, param, 'invalid_value');
  }
  return value as Record<string, unknown>;
}

/** The name of the function an earlier assistant message called with `toolCallId`, or a 400 naming the message's tool_call_id. */
export function toolNameOf(messages: readonly ChatMessage[], index: number, provider: string): string {
  const id = messages[index]?.toolCallId;
  for (let i = index - 1; i >= 0; i--) {
    const call = messages[i]?.toolCalls?.find((c) => c.id === id);
    if (call !== undefined) return call.name;
  }
  const param = `messages[${index}].tool_call_id`;
  throw invalidRequest(
    `'${param}' does not answer any tool call of an earlier assistant message (provider ${provider} needs the function name)`,
    param,
    'invalid_value',
  );
}
