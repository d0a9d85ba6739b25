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

/** `<prefix>_` + 48 hex characters: the ids of Responses API objects (`resp_`, `msg_`, `fc_`), as OpenAI's look. */
export function hexId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
