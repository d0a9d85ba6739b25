import { randomBytes } from 'node:crypto';
import type { RecordStore } from '../store/record-store.ts';
import { emailTaken } from '../errors/index.ts';
import {
  indexedRecords,
  indexKeys,
  indexRange,
  oldestFirst,
  type UserRecord,
  type UserRole,
} from '../store/database.ts';
import {
  DEFAULT_SCRYPT_PARAMS,
  hashPassword,
  type ScryptParams,
  verifyAgainstNothing,
  verifyPassword,
} from './password-hash.ts';
import { sha256Hex, sortableId } from '../store/secrets.ts';
import type { UserView } from './account-views.ts';

export interface NewUser {
  email: string;
  password: string;
  accountId: string;
  role: UserRole;
}

/** How long a first-run setup link stays valid. */
export const SETUP_TOKEN_TTL_MS = 24 * 60 * 60_000;

export type DeleteUserResult = 'deleted' | 'not_found' | 'last_owner';
export type SetupResult = { user: UserRecord } | 'invalid_token' | 'setup_complete';

export const userView = (u: UserRecord): UserView => ({
  id: u.id,
  email: u.email,
  role: u.role,
  accountId: u.accountId,
  createdAt: u.createdAt,
  lastSignInAt: u.lastSignInAt,
});

/**
 * Emails are compared trimmed, lower-cased and in Unicode NFC (one user per mailbox, whatever the spelling: `ä`
 * composed or as `a` + a combining mark are one address).
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase().normalize('NFC');
}

/**
 * Users of accounts (email + scrypt password hash, role owner/member) and the first-run setup token.
 * Email uniqueness and the last-owner rule are checked inside the write transaction, so they hold across
 * processes (the CLI and a server on one data dir). Removing a user ends its sessions in the same
 * transaction. Main thread; shares the process's HearthStore.
 */
export class UserRepository {
  constructor(
    private readonly store: RecordStore,
    private readonly kdf: ScryptParams = DEFAULT_SCRYPT_PARAMS,
  ) {}

  static newId(): string {
    return `usr_${sortableId()}`;
  }

  hasUsers(): boolean {
    for (const _ of this.store.dbs.users.getKeys({ limit: 1 })) return true;
    return false;
  }

  /** Creates a user; throws `email_taken` (409) when the email is in use. The password is hashed first. */
  async create(u: NewUser): Promise<UserRecord> {
    const passwordHash = await hashPassword(u.password, this.kdf);
    const record: UserRecord = {
      id: UserRepository.newId(),
      accountId: u.accountId,
      email: normalizeEmail(u.email),
      role: u.role,
      passwordHash,
      createdAt: new Date().toISOString(),
      lastSignInAt: null,
    };
    const created = await this.store.transaction(() => {
      if (this.idByEmail(record.email) !== undefined) return false;
      this.put(record);
      return true;
    });
    if (!created) throw emailTaken();
    return record;
  }

  get(id: string): UserRecord | undefined {
    return this.store.dbs.users.get(id);
  }

  getByEmail(email: string): UserRecord | undefined {
    // A user stored before emails were NFC-normalized (2026-11-28) keeps the key of its spelling then.
    const id = this.idByEmail(normalizeEmail(email)) ?? this.idByEmail(email.trim().toLowerCase());
    return id === undefined ? undefined : this.get(id);
  }

  /** An account's users (or every user), oldest first. */
  list(accountId?: string): UserRecord[] {
    const { users, index } = this.store.dbs;
    const out: UserRecord[] =
      accountId === undefined
        ? [...users.getRange()].map(({ value }) => value)
        : indexedRecords(index, users, 'user', accountId);
    return out.sort(oldestFirst);
  }

  /** Removes a user (of `accountId` when given) and ends its sessions; refuses to remove an account's last owner. */
  async delete(id: string, accountId?: string): Promise<DeleteUserResult> {
    const { users, sessions, index } = this.store.dbs;
    return this.store.transaction(() => {
      const u = users.get(id);
      if (!u || (accountId !== undefined && u.accountId !== accountId)) return 'not_found';
      if (u.role === 'owner' && !this.list(u.accountId).some((o) => o.role === 'owner' && o.id !== u.id))
        return 'last_owner';
      for (const { key } of [...index.getRange(indexRange('user-session', u.id))]) {
        sessions.remove(String(key[2]));
        index.remove(key);
      }
      users.remove(u.id);
      index.remove(indexKeys.user(u.accountId, u.id));
      index.remove(indexKeys.userEmail(u.email, u.id));
      return 'deleted';
    });
  }

  /**
   * The user whose email and password match, or null. An unknown email costs the same KDF work as a wrong
   * password, so timing does not tell which emails have accounts.
   */
  async verify(email: string, password: string): Promise<UserRecord | null> {
    const u = this.getByEmail(email);
    if (!u) return verifyAgainstNothing(password).then(() => null);
    return (await verifyPassword(password, u.passwordHash)) ? u : null;
  }

  async recordSignIn(id: string): Promise<void> {
    const { users } = this.store.dbs;
    await this.store.transaction(() => {
      const u = users.get(id);
      if (u) users.put(id, { ...u, lastSignInAt: new Date().toISOString() });
    });
  }

  // First-run setup ------------------------------------------------------------------------------------

  /**
   * When no user exists: a fresh single-use setup token (only its SHA-256 is stored), valid for `ttlMs`;
   * earlier tokens are voided. Null once a user exists.
   */
  async issueSetupToken(ttlMs: number): Promise<string | null> {
    const token = randomBytes(24).toString('base64url');
    const now = Date.now();
    const { setupTokens } = this.store.dbs;
    const issued = await this.store.transaction(() => {
      if (this.hasUsers()) return false;
      for (const key of [...setupTokens.getKeys()]) setupTokens.remove(key);
      setupTokens.put(sha256Hex(token), {
        createdAt: new Date(now).toISOString(),
        expiresAt: new Date(now + ttlMs).toISOString(),
      });
      return true;
    });
    return issued ? token : null;
  }

  /** Whether `token` is a live setup token (a cheap check before spending a password hash on the request). */
  setupTokenValid(token: string): boolean {
    const t = this.store.dbs.setupTokens.get(sha256Hex(token));
    return t !== undefined && Date.parse(t.expiresAt) > Date.now();
  }

  /** Creates the first owner with a live setup token, and voids every setup token: all in one transaction. */
  async setupFirstOwner(token: string, email: string, password: string, accountId: string): Promise<SetupResult> {
    if (this.hasUsers()) return 'setup_complete';
    if (!this.setupTokenValid(token)) return 'invalid_token';
    const passwordHash = await hashPassword(password, this.kdf);
    const record: UserRecord = {
      id: UserRepository.newId(),
      accountId,
      email: normalizeEmail(email),
      role: 'owner',
      passwordHash,
      createdAt: new Date().toISOString(),
      lastSignInAt: null,
    };
    const { setupTokens } = this.store.dbs;
    return this.store.transaction((): SetupResult => {
      if (this.hasUsers()) return 'setup_complete';
      if (!this.setupTokenValid(token)) return 'invalid_token';
      for (const key of [...setupTokens.getKeys()]) setupTokens.remove(key);
      this.put(record);
      return { user: record };
    });
  }

  // -----------------------------------------------------------------------------------------------------

  private idByEmail(email: string): string | undefined {
    for (const { key } of this.store.dbs.index.getRange({ ...indexRange('user-email', email), limit: 1 }))
      return String(key[2]);
    return undefined;
  }

  /** Writes a new user with its index entries and account record; call inside a transaction. */
  private put(u: UserRecord): void {
    const { accounts, users, index } = this.store.dbs;
    if (accounts.get(u.accountId) === undefined)
      accounts.put(u.accountId, { id: u.accountId, name: u.accountId, createdAt: u.createdAt });
    users.put(u.id, u);
    index.put(indexKeys.user(u.accountId, u.id), true);
    index.put(indexKeys.userEmail(u.email, u.id), true);
  }
}
