import { upstreamBadResponse } from '../errors/errors.ts';
import type { UpstreamAttempt } from './upstream-attempt.ts';

/**
 * Reads an upstream response body under an UpstreamAttempt: each read must deliver bytes within
 * `idleMs` (the timer runs only while a read is pending, so a slow consumer is never mistaken for a
 * stalled upstream). Failures become: the client's AbortError, a 504 on idle time-out, or a 502
 * `stream_interrupted` when the connection breaks.
 */
export async function* readBodyChunks(
  response: Response,
  attempt: UpstreamAttempt,
  idleMs: number,
  provider: string,
): AsyncGenerator<Uint8Array> {
  if (response.body === null) return;
  const reader = response.body.getReader();
  let finished = false;
  try {
    for (;;) {
      attempt.arm(idleMs);
      let result: Awaited<ReturnType<typeof reader.read>>;
      try {
        result = await reader.read();
      } catch (err) {
        finished = true;
        throw (
          attempt.abortFailure() ??
          upstreamBadResponse(
            provider,
            `the connection broke while reading the answer (${describeNetworkError(err)})`,
            'stream_interrupted',
          )
        );
      } finally {
        attempt.disarm();
      }
      if (result.done) {
        finished = true;
        return;
      }
      yield result.value;
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** The whole body as UTF-8 text, at most `maxBytes` (more -> 502 bad_response). */
export async function readBodyText(
  response: Response,
  attempt: UpstreamAttempt,
  idleMs: number,
  maxBytes: number,
  provider: string,
): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of readBodyChunks(response, attempt, idleMs, provider)) {
    size += chunk.byteLength;
    if (size > maxBytes) throw upstreamBadResponse(provider, `the answer exceeds ${maxBytes} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** A short, secret-free description of a fetch/socket failure (`ECONNREFUSED`, `other side closed`, ...). */
export function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  const causeMessage = (cause as { message?: unknown } | undefined)?.message;
  if (typeof causeMessage === 'string' && causeMessage !== '') return causeMessage.slice(0, 200);
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message.slice(0, 200) : 'network error';
}
