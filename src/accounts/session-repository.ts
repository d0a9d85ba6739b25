import { randomBytes } from 'node:crypto';
import type { RecordStore } from '../store/record-store.ts';
import { indexKeys, indexRange, type SessionRecord } from '../store/database.ts';
import { sha256Hex } from '../store/secrets.ts';

export interface SessionLifetimes {
  /** A session ends after this long without a request. */
  idleMs: number;
  /** A session ends this long after it began, used or not. */
  maxAgeMs: number;
}

export interface LiveSession extends SessionRecord {
  /** When the session ends if it stays idle, or at its absolute expiry, whichever is first (ms since epoch). */
  endsAt: number;
}

/**
 * Dashboard sessions. The cookie value is 256 random bits; only its SHA-256 is stored (a copy of the data
 * dir opens no session). Idle expiry counts from `lastSeenAt`, written at most every `touchIntervalMs`
 * (a tenth of the idle time, at most a minute), so a busy session costs no write per request. Expired
 * records are removed when met, per user at each new sign-in, and by `sweepExpired`. Main thread.
 */
export class SessionRepository {
  private readonly touchIntervalMs: number;

  constructor(
    private readonly store: RecordStore,
    private readonly lifetimes: SessionLifetimes,
  ) {
    this.touchIntervalMs = Math.min(60_000, Math.floor(lifetimes.idleMs / 10));
  }

  /** Starts a session for a user; returns the cookie value (shown to the browser only). */
  async create(userId: string, accountId: string): Promise<{ token: string; session: LiveSession }> {
    const token = randomBytes(32).toString('base64url');
    const hash = sha256Hex(token);
    const now = Date.now();
    const record: SessionRecord = {
      userId,
      accountId,
      createdAt: new Date(now).toISOString(),
      lastSeenAt: new Date(now).toISOString(),
      expiresAt: new Date(now + this.lifetimes.maxAgeMs).toISOString(),
    };
    const { sessions, index } = this.store.dbs;
    await this.store.transaction(() => {
      for (const { key } of [...index.getRange(indexRange('user-session', userId))]) {
        const h = String(key[2]);
        const s = sessions.get(h);
        if (!s || this.endsAt(s) <= now) {
          sessions.remove(h);
          index.remove(key);
        }
      }
      sessions.put(hash, record);
      index.put(indexKeys.userSession(userId, hash), true);
    });
    return { token, session: { ...record, endsAt: this.endsAt(record) } };
  }

  /** The live session for a cookie value and marks it used, or null (unknown, expired or ended). */
  resolve(token: string): LiveSession | null {
    if (token.length === 0 || token.length > 128) return null;
    const hash = sha256Hex(token);
    const s = this.store.dbs.sessions.get(hash);
    if (!s) return null;
    const now = Date.now();
    if (this.endsAt(s) <= now) {
      void this.remove(hash, s.userId).catch(() => {});
      return null;
    }
    let current = s;
    if (now - Date.parse(s.lastSeenAt) >= this.touchIntervalMs) {
      current = { ...s, lastSeenAt: new Date(now).toISOString() };
      void this.touch(hash, current.lastSeenAt).catch(() => {});
    }
    return { ...current, endsAt: this.endsAt(current) };
  }

  /** Ends the session of a cookie value (sign-out). Idempotent. */
  async end(token: string): Promise<void> {
    const hash = sha256Hex(token);
    const s = this.store.dbs.sessions.get(hash);
    if (s) await this.remove(hash, s.userId);
  }

  /** Removes every ended session (a maintenance scan: the server runs it at start and hourly). Returns how many. */
  async sweepExpired(): Promise<number> {
    const { sessions, index } = this.store.dbs;
    const now = Date.now();
    return this.store.transaction(() => {
      let removed = 0;
      for (const { key, value } of [...sessions.getRange()]) {
        if (this.endsAt(value) > now) continue;
        sessions.remove(key);
        index.remove(indexKeys.userSession(value.userId, key));
        removed++;
      }
      return removed;
    });
  }

  private endsAt(s: SessionRecord): number {
    return Math.min(Date.parse(s.lastSeenAt) + this.lifetimes.idleMs, Date.parse(s.expiresAt));
  }

  private async touch(hash: string, lastSeenAt: string): Promise<void> {
    const { sessions } = this.store.dbs;
    await this.store.transaction(() => {
      const s = sessions.get(hash);
      if (s && s.lastSeenAt < lastSeenAt) sessions.put(hash, { ...s, lastSeenAt });
    });
  }

  private async remove(hash: string, userId: string): Promise<void> {
    const { sessions, index } = this.store.dbs;
    await this.store.transaction(() => {
      sessions.remove(hash);
      index.remove(indexKeys.userSession(userId, hash));
    });
  }
}
