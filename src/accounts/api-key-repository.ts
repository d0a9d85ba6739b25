import { unauthorized } from '../errors/index.ts';
import { orRefreshed } from './fresh-credentials.ts';
import type { RecordStore } from '../store/record-store.ts';
import type { ApiKeyRecord, KeyLimits } from '../store/database.ts';
import type { ApiKeyView, CreatedApiKey } from './account-views.ts';
import { issueCredential, parseCredential, randomId, secretMatches, UNKNOWN_ID_SECRET_HASH } from '../store/secrets.ts';

export interface AuthenticatedKey {
  keyId: string;
  accountId: string;
  /** The key's limits as stored now, its priority always given (a PATCH applies to the next request). */
  limits: Required<KeyLimits>;
}

/** A key without limits, at the default priority (a stored record's absent fields read as these). */
export const NO_LIMITS: Required<KeyLimits> = Object.freeze({
  requestsPerMinute: null,
  tokensPerMinute: null,
  maxConcurrent: null,
  priority: 'interactive',
});

export const DEFAULT_ACCOUNT_ID = 'default';
/** How often `lastUsedAt` is written for a busy key (a write per request would cost throughput). */
const LAST_USED_RESOLUTION_MS = 60_000;
const VERIFIED_CACHE_LIMIT = 10_000;

function view(r: ApiKeyRecord): ApiKeyView {
  return {
    id: r.id,
    name: r.name,
    accountId: r.accountId,
    createdAt: r.createdAt,
    lastUsedAt: r.lastUsedAt,
    revokedAt: r.revokedAt,
    limits: { ...NO_LIMITS, ...r.limits },
  };
}

/** API keys of accounts. Lookup is by the key's public id (no scans), then a constant-time hash compare. */
export class ApiKeyRepository {
  private readonly lastUsedWritten = new Map<string, number>();
  /** Presented key -> the record it was verified against. Bounded; holds nothing not already in memory per request. */
  private readonly verified = new Map<string, { id: string; secretHash: string }>();

  constructor(private readonly store: RecordStore) {}

  async create(
    name: string,
    accountId: string = DEFAULT_ACCOUNT_ID,
    limits: KeyLimits = NO_LIMITS,
  ): Promise<CreatedApiKey> {
    const { apiKeys, accounts, index } = this.store.dbs;
    const cred = issueCredential('hk', randomId());
    const now = new Date().toISOString();
    const record: ApiKeyRecord = {
      id: cred.id,
      accountId,
      name,
      secretHash: cred.secretHash,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
      limits: { ...limits },
    };
    await this.store.transaction(() => {
      if (accounts.get(accountId) === undefined)
        accounts.put(accountId, { id: accountId, name: accountId, createdAt: now });
      apiKeys.put(record.id, record);
      index.put(['key', accountId, record.id], true);
    });
    return { ...view(record), key: cred.plaintext };
  }

  list(accountId?: string): ApiKeyView[] {
    const { apiKeys, index } = this.store.dbs;
    if (accountId === undefined) return [...apiKeys.getRange()].map(({ value }) => view(value));
    const out: ApiKeyView[] = [];
    for (const { key } of index.getRange({ start: ['key', accountId], end: ['key', accountId, '\uffff'] })) {
      const record = apiKeys.get(String(key[2]));
      if (record) out.push(view(record));
    }
    return out;
  }

  get(id: string): ApiKeyView | undefined {
    const r = this.store.dbs.apiKeys.get(id);
    return r ? view(r) : undefined;
  }

  /** Revokes at once: the next request with the key is Unauthorized. False when no such key (for that account). */
  async revoke(id: string, accountId?: string): Promise<boolean> {
    const { apiKeys } = this.store.dbs;
    return this.store.transaction(() => {
      const r = apiKeys.get(id);
      if (!r || (accountId !== undefined && r.accountId !== accountId)) return false;
      if (r.revokedAt === null) apiKeys.put(id, { ...r, revokedAt: new Date().toISOString() });
      return true;
    });
  }

  /**
   * Renames a key and/or changes its limits (a limit left undefined keeps its value). Undefined when there
   * is no such key for the account; a revoked key can still be renamed but stays revoked.
   */
  async update(
    id: string,
    accountId: string,
    change: { name?: string | undefined; limits?: Partial<KeyLimits> | undefined },
  ): Promise<ApiKeyView | undefined> {
    const { apiKeys } = this.store.dbs;
    return this.store.transaction(() => {
      const r = apiKeys.get(id);
      if (!r || r.accountId !== accountId) return undefined;
      const limits = { ...NO_LIMITS, ...r.limits };
      for (const k of ['requestsPerMinute', 'tokensPerMinute', 'maxConcurrent'] as const)
        if (change.limits?.[k] !== undefined) limits[k] = change.limits[k];
      if (change.limits?.priority !== undefined) limits.priority = change.limits.priority;
      const updated: ApiKeyRecord = { ...r, name: change.name ?? r.name, limits };
      apiKeys.put(id, updated);
      return view(updated);
    });
  }

  /**
   * authenticate, and for a key unknown here once more after the records caught up (fresh-credentials.ts); only a
   * well-formed key can be a moment old elsewhere: none, or a malformed one, is a 401 at once.
   */
  authenticateFresh(presented: string | undefined): AuthenticatedKey | Promise<AuthenticatedKey> {
    const couldExist = presented !== undefined && parseCredential('hk', presented) !== null;
    return orRefreshed(
      () => this.authenticate(presented),
      couldExist ? this.store.refresh?.bind(this.store) : undefined,
    );
  }

  /**
   * Verifies a presented bearer key; throws `unauthorized()` for anything but a live, matching key.
   * The record is read on every call (a revocation, from this process or the CLI, is seen at once); what is
   * cached is only the expensive part for a key already verified: parsing and the SHA-256 of its secret.
   */
  authenticate(presented: string | undefined): AuthenticatedKey {
    if (!presented) throw unauthorized();
    let verified = this.verified.get(presented);
    if (verified === undefined) {
      const parsed = parseCredential('hk', presented);
      if (!parsed) throw unauthorized();
      const record = this.store.dbs.apiKeys.get(parsed.id);
      // One hash and one constant-time compare whether or not the id exists (README "Limits").
      const matches = secretMatches(parsed.secret, record?.secretHash ?? UNKNOWN_ID_SECRET_HASH);
      if (!record || record.revokedAt !== null || !matches) throw unauthorized();
      verified = { id: record.id, secretHash: record.secretHash };
      if (this.verified.size >= VERIFIED_CACHE_LIMIT) this.verified.clear();
      this.verified.set(presented, verified);
    }
    const record = this.store.dbs.apiKeys.get(verified.id);
    // The stored hash must still be the one the secret was verified against (same record, not re-created).
    if (!record || record.revokedAt !== null || record.secretHash !== verified.secretHash) {
      this.verified.delete(presented);
      throw unauthorized();
    }
    this.touch(record);
    return {
      keyId: record.id,
      accountId: record.accountId,
      limits:
        record.limits?.priority !== undefined
          ? (record.limits as Required<KeyLimits>)
          : { ...NO_LIMITS, ...record.limits },
    };
  }

  private touch(record: ApiKeyRecord): void {
    const now = Date.now();
    const last = this.lastUsedWritten.get(record.id) ?? 0;
    if (now - last < LAST_USED_RESOLUTION_MS) return;
    this.lastUsedWritten.set(record.id, now);
    const { apiKeys } = this.store.dbs;
    void this.store
      .transaction(() => {
        const current = apiKeys.get(record.id);
        if (current) apiKeys.put(record.id, { ...current, lastUsedAt: new Date(now).toISOString() });
      })
      .catch(() => {});
  }
}
