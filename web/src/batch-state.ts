import type { BatchView } from './types.ts';

/** Why a batch stopped before its end for its owner (docs/batch-api.md): the key that made it is revoked or gone. */
const OWNER_GONE: Record<string, string> = {
  api_key_revoked: 'its key was revoked',
  api_key_not_found: 'its key is gone',
};

/** The reason the Batches page shows beside a batch's state, or undefined for a batch that ran its course. Pure. */
export function stoppedBecause(b: Pick<BatchView, 'errors'>): string | undefined {
  return b.errors?.data.map((e) => OWNER_GONE[e.code]).find((reason) => reason !== undefined);
}
