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
 * `GET /responses/{id}` or a `previous_response_id` sent right after finds it, and it survives a restart.
 */
export class ResponseRepository {
  constructor(
    private readonly store: RecordStore,
    private readonly ttlDays: number,
    private readonly now: () => number = Date.now,
  ) {}

  put(r: StoredResponse): void {
    const created = this.now();
    const record: StoredResponseRecord = {
      id: r.id,
      accountId: r.accountId,
      createdAt: new Date(created).toISOString(),
      expiresAt: new Date(created + this.ttlDays * DAY_MS).toISOString(),
      response: r.response,
      inputItems: r.inputItems,
      history: r.history as unknown as Record<string, unknown>[],
    };
    const { responses, index } = this.store.dbs;
    this.store.transactionSync(() => {
      responses.putSync(record.id, record);
      index.putSync(indexKeys.responseExpiry(record.expiresAt, record.id), true);
    });
  }

  /** The account's live response `id`, or undefined (unknown, another account's, or expired: all alike). */
  get(accountId: string, id: string): StoredResponse | undefined {
    const rec = this.store.dbs.responses.get(id);
    if (rec === undefined || rec.accountId !== accountId || Date.parse(rec.expiresAt) <= this.now()) return undefined;
    return { id: rec.id, accountId: rec.accountId, response: rec.response, inputItems: rec.inputItems as InputItem[], history: rec.history as unknown as ChatMessage[] };
  }

  /**
   * `get`, and for an id unknown here once more after the records caught up: a response stored by another replica
   * a moment ago (accounts/fresh-credentials.ts). Synchronous when found, and always on LMDB.
   */
  getFresh(accountId: string, id: string): StoredResponse | undefined | Promise<StoredResponse | undefined> {
    const found = this.get(accountId, id);
    if (found !== undefined || this.store.refresh === undefined) return found;
    return this.store.refresh().then(() => this.get(accountId, id));
  }

  /** Removes the account's response `id`; false when there was none to remove (as `get`). */
  delete(accountId: string, id: string): boolean {
    const { responses, index } = this.store.dbs;
    return this.store.transactionSync(() => {
      const rec = responses.get(id);
      if (rec === undefined || rec.accountId !== accountId || Date.parse(rec.expiresAt) <= this.now()) return false;
      responses.removeSync(id);
      index.removeSync(indexKeys.responseExpiry(rec.expiresAt, id));
      return true;
    });
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
