import {
  invalidCredentials,
  invalidSetupToken,
  lastOwner,
  ownerRequired,
  setupComplete,
  tooManySignInAttempts,
  unauthorized,
  userNotFound,
} from '../errors/index.ts';
import { DEFAULT_ACCOUNT_ID } from './api-key-repository.ts';
import type { LiveSession, SessionRepository } from './session-repository.ts';
import { normalizeEmail, type UserRepository, userView } from './user-repository.ts';
import type { UserView, WhoAmI } from './account-views.ts';
import type { Principal } from './authenticator.ts';
import { parseSetupInput, parseSignInInput, parseUserInput } from './account-input.ts';
import { listView, type ListView } from '../http/list-view.ts';
import type { SignInLimiting } from '../limits/sign-in-limiter.ts';

export interface AccountServiceDeps {
  users: UserRepository;
  sessions: SessionRepository;
  signIns: SignInLimiting;
  /** RecordStore.current where the records can be behind another replica's (PostgreSQL): sign-in and the setup status wait for it. */
  current?: (() => Promise<void>) | undefined;
}

/** A new session: the cookie value goes to the browser only. */
export interface StartedSession {
  token: string;
  session: LiveSession;
  user: UserView;
}

/** Password hashes in progress or waiting for libuv's pool at once; beyond it sign-ins are turned away (429). */
const MAX_PENDING_PASSWORD_WORK = 32;

/**
 * Users and sessions of accounts, shared by the HTTP routes (and, for users, the CLI's rules): first-run
 * setup, sign-in / sign-out, who-am-I, and the owner-only users routes. Validates raw JSON bodies, returns
 * views; knows nothing of HTTP or cookies. Password work (scrypt) is bounded: at most
 * MAX_PENDING_PASSWORD_WORK at once, so a flood of sign-ins cannot queue unbounded memory-hard work.
 */
export class AccountService {
  private pendingPasswordWork = 0;

  constructor(private readonly d: AccountServiceDeps) {}

  /** Whether the first owner is still to be made (after the records caught up with the fleet, where they can be behind). */
  setupStatus(): { setupRequired: boolean } | Promise<{ setupRequired: boolean }> {
    const answer = () => ({ setupRequired: !this.d.users.hasUsers() });
    return this.d.current ? this.d.current().then(answer) : answer();
  }

  /** Creates the first owner (account `default`) with the setup token and signs them in. */
  async setup(body: unknown): Promise<StartedSession> {
    const input = parseSetupInput(body);
    const result = await this.passwordWork(() =>
      this.d.users.setupFirstOwner(input.token, input.email, input.password, DEFAULT_ACCOUNT_ID),
    );
    if (result === 'setup_complete') throw setupComplete();
    if (result === 'invalid_token') throw invalidSetupToken();
    return this.startSession(result.user.id);
  }

  /**
   * Checks email + password and starts a session. Refused (429, without checking the password) while the
   * email or the client address is over its failed sign-in limit, checks in progress included; every
   * failure counts against both.
   */
  async signIn(body: unknown, clientAddress: string): Promise<StartedSession> {
    const input = parseSignInInput(body);
    const email = normalizeEmail(input.email);
    const gate = await this.d.signIns.tryBegin(email, clientAddress);
    if ('retryAfter' in gate) throw tooManySignInAttempts(gate.retryAfter);
    const { attempt } = gate; // holds its place until the check ends
    let user;
    try {
      await this.d.current?.(); // a user made on another replica a moment ago signs in here too
      user = await this.passwordWork(() => this.d.users.verify(email, input.password));
      if (user) attempt.succeeded();
      else attempt.failed();
    } finally {
      attempt.end();
    }
    if (!user) throw invalidCredentials();
    return this.startSession(user.id);
  }

  /** Sign-out: ends the cookie's session if it is live. Idempotent. */
  async signOut(sessionTokens: readonly string[]): Promise<void> {
    for (const token of sessionTokens) await this.d.sessions.end(token);
  }

  whoAmI(p: Principal): WhoAmI {
    if (p.kind === 'key') return { auth: 'key', accountId: p.accountId, user: null, role: null, expiresAt: null };
    const user = this.d.users.get(p.userId);
    if (!user) throw unauthorized();
    return {
      auth: 'session',
      accountId: p.accountId,
      user: userView(user),
      role: user.role,
      expiresAt: new Date(p.sessionEndsAt).toISOString(),
    };
  }

  // Users of the caller's account (owner only) ----------------------------------------------------------

  listUsers(p: Principal): ListView<UserView> {
    this.requireOwner(p);
    return listView(this.d.users.list(p.accountId).map(userView));
  }

  async createUser(p: Principal, body: unknown): Promise<UserView> {
    this.requireOwner(p);
    const input = parseUserInput(body);
    const user = await this.passwordWork(() =>
      this.d.users.create({ email: input.email, password: input.password, role: input.role, accountId: p.accountId }),
    );
    return userView(user);
  }

  async deleteUser(p: Principal, userId: string): Promise<{ id: string; deleted: true }> {
    this.requireOwner(p);
    const result = await this.d.users.delete(userId, p.accountId);
    if (result === 'not_found') throw userNotFound();
    if (result === 'last_owner') throw lastOwner();
    return { id: userId, deleted: true };
  }

  // -----------------------------------------------------------------------------------------------------

  private requireOwner(p: Principal): void {
    if (p.kind !== 'session' || p.role !== 'owner') throw ownerRequired();
  }

  private async startSession(userId: string): Promise<StartedSession> {
    const user = this.d.users.get(userId);
    if (!user) throw invalidCredentials();
    const { token, session } = await this.d.sessions.create(user.id, user.accountId);
    await this.d.users.recordSignIn(user.id);
    return { token, session, user: userView({ ...user, lastSignInAt: session.createdAt }) };
  }

  private async passwordWork<T>(work: () => Promise<T>): Promise<T> {
    if (this.pendingPasswordWork >= MAX_PENDING_PASSWORD_WORK) throw tooManySignInAttempts(1);
    this.pendingPasswordWork++;
    try {
      return await work();
    } finally {
      this.pendingPasswordWork--;
    }
  }
}
