import { indexKeys, indexRange, type StoredResponseRecord } from '../store/database.ts';
import type { RecordStore } from '../store/record-store.ts';
import type { ChatMessage } from '../protocol/chat-request.ts';
import type { InputItem } from '../protocol/responses-request.ts';

/** A stored response as the inference feature reads it. */
export interface StoredResponse {
  id: string;
  accountId: string;
  response: Record<string, unknown>;
  inputItems: InputItem[];
  /** The conversation up to and including this response's output, as chat messages (no instructions). */
  history: ChatMessage[];
}

const DAY_MS = 86_400_000;

/**
 * Responses API state in the records store (contract "Responses API state"): a response kept by `store` lives
 * `ttlDays`, visible only to the account that made it; an expired one reads as absent and the sweep removes it.
 * Writes are synchronous (one LMDB write transaction): a response is stored before its answer goes out, so a
 * `GET /responses/{id}` or a `previous_response_id` sent right after finds it, and it survives a restart. On
 * PostgreSQL (a fleet) `put` is in this replica's records at once and committed right after: it also returns that
 * commit, which the answer waits for; `delete` resolves once committed, and `getCurrent` reads after the records
 * caught up with every replica (RecordStore.current), so the next request finds the response, or its removal, on
 * any replica.
 */
export class ResponseRepository {
  constructor(
    private readonly store: RecordStore,
    private readonly ttlDays: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Stores `r`; returns its commit where other replicas read it (undefined: durable already, LMDB). */
  put(r: StoredResponse): Promise<void> | undefined {
    const created = this.now();
    const record: StoredResponseRecord = {
      id: r.id,
      accountId: r.accountId,
      createdAt: new Date(created).toISOString(),
      expiresAt: new Date(created + this.ttlDays * DAY_MS).toISOString(),
      response: JSON.stringify(r.response),
      inputItems: r.inputItems,
      history: r.history as unknown as Record<string, unknown>[],
    };
    const { responses, index } = this.store.dbs;
    this.store.transactionSync(() => {
      responses.putSync(record.id, record);
      index.putSync(indexKeys.responseExpiry(record.expiresAt, record.id), true);
    });
    return this.store.syncCommitted?.();
  }

  /** The account's live response `id`, or undefined (unknown, another account's, or expired: all alike). */
  get(accountId: string, id: string): StoredResponse | undefined {
    const rec = this.store.dbs.responses.get(id);
    if (rec === undefined || rec.accountId !== accountId || Date.parse(rec.expiresAt) <= this.now()) return undefined;
    return {
      id: rec.id,
      accountId: rec.accountId,
      response: typeof rec.response === 'string' ? (JSON.parse(rec.response) as Record<string, unknown>) : rec.response,
      inputItems: rec.inputItems as InputItem[],
      history: rec.history as unknown as ChatMessage[],
    };
  }

  /**
   * `get` once the records hold every replica's writes (RecordStore.current: one catch-up query, shared; it rejects
   * with store_unavailable when the database cannot say). Synchronous on LMDB.
   */
  getCurrent(accountId: string, id: string): StoredResponse | undefined | Promise<StoredResponse | undefined> {
    if (this.store.current === undefined) return this.get(accountId, id);
    return this.store.current().then(() => this.get(accountId, id));
  }

  /**
   * Removes the account's response `id`; false when there was none to remove (as `get`). Where the records can be
   * behind (PostgreSQL), as one transaction under the fleet-wide lock, committed when it resolves.
   */
  delete(accountId: string, id: string): boolean | Promise<boolean> {
    const { responses, index } = this.store.dbs;
    /** The removal, in a transaction (async) or in a synchronous one (removeSync, as transactionSync requires). */
    const removeLive = (sync: boolean) => (): boolean => {
      const rec = responses.get(id);
      if (rec === undefined || rec.accountId !== accountId || !(Date.parse(rec.expiresAt) > this.now())) return false;
      const expiry = indexKeys.responseExpiry(rec.expiresAt, id);
      if (sync) {
        responses.removeSync(id);
        index.removeSync(expiry);
      } else {
        responses.remove(id);
        index.remove(expiry);
      }
      return true;
    };
    return this.store.current !== undefined
      ? this.store.transaction(removeLive(false))
      : this.store.transactionSync(removeLive(true));
  }

  /** Removes every expired response (a short range read over the expiry index); returns how many. */
  async sweep(): Promise<number> {
    const { responses, index } = this.store.dbs;
    const cutoff = new Date(this.now()).toISOString();
    const { start } = indexRange('response-expiry');
    const expired = [...index.getKeys({ start, end: ['response-expiry', cutoff] })] as string[][];
    if (expired.length === 0) return 0;
    await this.store.transaction(() => {
      for (const key of expired) {
        const id = key[2]!;
        const rec = responses.get(id);
        if (rec !== undefined && rec.expiresAt === key[1]) responses.remove(id);
        index.remove(key);
      }
    });
    return expired.length;
  }
}
