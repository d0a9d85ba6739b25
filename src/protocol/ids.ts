import { randomBytes } from 'node:crypto';

/** `chatcmpl-` + 24 url-safe random chars, like OpenAI's ids. */
export function newCompletionId(): string {
  return `chatcmpl-${randomBytes(18).toString('base64url')}`;
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** `cmpl-` + 24 url-safe random chars: a legacy text completion's id, as OpenAI's. */
export function newTextCompletionId(): string {
  return `cmpl-${randomBytes(18).toString('base64url')}`;
}
