import type { ApiKeyView } from '../accounts/account-views.ts';
import type { BatchError, BatchRecord } from './batch-records.ts';

/**
 * Whether a batch's owner may still have work run for it: the key that made the batch must still be a live key of
 * the batch's account. Null while it is; else the `errors` entry the batch ends with (code `api_key_revoked`,
 * or `api_key_not_found` for a key that is gone or moved to another account). The runner asks before every claim
 * (BatchRunner.fill), so a revocation stops the batch at its next line, not only at its start.
 *
 * Reads the records synchronously: on PostgreSQL this replica's mirror, a NOTIFY (at most a 500 ms poll) behind
 * the replica or CLI that revoked the key, so every replica notices on its own. Main thread.
 */
export type BatchOwnerCheck = (b: Pick<BatchRecord, 'keyId' | 'accountId'>) => BatchError | null;

/** The check against the API keys (ApiKeyRepository.get: the record as stored now, revocations included). */
export function keyOwnerCheck(keys: { get(id: string): ApiKeyView | undefined }): BatchOwnerCheck {
  return (b) => {
    const key = keys.get(b.keyId);
    if (key !== undefined && key.accountId === b.accountId && key.revokedAt === null) return null;
    if (key !== undefined && key.accountId === b.accountId)
      return ownerGone('api_key_revoked', `The API key ${b.keyId} that created this batch was revoked`);
    return ownerGone('api_key_not_found', `The API key ${b.keyId} that created this batch no longer exists`);
  };
}

/** The codes of the `errors` entries keyOwnerCheck makes: a batch ended for its owner (BatchRunner.finalize). */
export const OWNER_GONE_CODES: readonly string[] = ['api_key_revoked', 'api_key_not_found'];

function ownerGone(code: string, what: string): BatchError {
  return { code, message: `${what}: lines not answered by then were not run.`, param: null, line: null };
}
