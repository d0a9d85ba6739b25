import type { KeyAuthenticator } from '../accounts/authenticator.ts';
import { whenReady } from '../accounts/fresh-credentials.ts';
import type { InferenceCaller } from './prompt-cache-scope.ts';
import type { KeyLimiting } from '../limits/key-limiter.ts';
import { invalidRequest, keyRevokedMidRequest } from '../errors/index.ts';
import type { ChatDeltaSink } from '../protocol/chat-delta.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import { bearerToken } from '../http/router.ts';

/**
 * The shared model's generation routes (chat completions, responses) behind the caller's API key and its
 * limits: authenticates synchronously and admits (call it before the handler's first await), sends the
 * x-ratelimit-* headers, then runs `answer` with the parsed body (the route declares `body: {kind: 'json'}`), `meter`, which wraps a ChatDeltaSink so
 * the finish delta's tokens count against the key, and the caller (key and account: the generation's prompt-cache partition). The lease is released on every path (answered, failed,
 * or the client went away). `token`: the key as the caller's API sends it (default: `Authorization: Bearer`).
 * A generation whose key is revoked while it runs fails with 401 `api_key_revoked` (an error event once streaming)
 * within about a second, and stops.
 */
export async function withKeyAdmission(
  ex: HttpExchange,
  keys: KeyAuthenticator,
  limiter: KeyLimiting,
  answer: (json: unknown, meter: (sink: ChatDeltaSink) => ChatDeltaSink, caller: InferenceCaller) => Promise<void>,
  token: string | undefined = bearerToken(ex.authorization),
): Promise<void> {
  const key = await keys.authenticateFresh(token);
  // In memory the admission is synchronous; across a fleet (FleetKeyLimiter) it is a database transaction, and the
  // body is read meanwhile (the route declares it).
  const admission = await limiter.admit(key.keyId, key.limits);
  ex.addHeaders(admission.headers);
  if (!admission.ok) throw admission.error;
  const { lease } = admission;
  let watch: NodeJS.Timeout | undefined;
  try {
    const json = await ex.json(); // the route declares body: {kind: 'json'}
    if (json === undefined) throw invalidRequest('Request body is required', null, 'missing_body');
    await answer(
      json,
      (sink) => {
        // A key revoked while its generation runs ends it (the responder stops the producer on a failure).
        watch ??= setInterval(() => {
          if (stillValid(keys, token)) return;
          clearInterval(watch);
          sink.fail(keyRevokedMidRequest());
        }, REVOCATION_CHECK_MS);
        watch.unref();
        return {
          push: (delta) => {
            if (delta.type === 'finish' && delta.usage !== undefined)
              lease.recordTokens(delta.usage.promptTokens + delta.usage.completionTokens);
            sink.push(delta);
          },
          fail: (e) => sink.fail(e),
        };
      },
      { keyId: key.keyId, accountId: key.accountId, priority: key.limits.priority ?? 'interactive' },
    );
  } finally {
    clearInterval(watch);
    lease.release();
  }
}

/**
 * How often running work checks that its credential is still live (a generation its key, a project call its project).
 * A revocation reaches this replica's records at once (LMDB) or within 0.5 s (PostgreSQL's NOTIFY or poll), so the
 * work ends within about a second of it.
 */
export const REVOCATION_CHECK_MS = 500;

/** Whether `token` still authenticates (not revoked, rotated away or deleted): a synchronous read of the records. */
function stillValid(keys: KeyAuthenticator, token: string | undefined): boolean {
  try {
    keys.authenticate(token);
    return true;
  } catch {
    return false;
  }
}

/**
 * A shared-endpoint read (models, a stored response): the caller's API key authenticated (401 otherwise) and its
 * x-ratelimit-* headers sent, without taking a request of its limits. Synchronous for a known key (a read answers
 * without a promise); a key unknown here is looked up once more after the records caught up (fresh-credentials.ts).
 */
export function readerKey(
  ex: HttpExchange,
  keys: KeyAuthenticator,
  limiter: KeyLimiting,
): InferenceCaller | Promise<InferenceCaller> {
  return whenReady(keys.authenticateFresh(bearerToken(ex.authorization)), (key) => {
    ex.addHeaders(limiter.peek(key.keyId, key.limits));
    return { keyId: key.keyId, accountId: key.accountId, priority: key.limits.priority ?? 'interactive' };
  });
}
