import { originMismatch, sessionExpired } from '../errors/index.ts';
import type { KeyLimits, UserRole } from '../store/database.ts';
import { parseCredential } from '../store/secrets.ts';
import type { SessionRepository } from './session-repository.ts';
import type { UserRepository } from './user-repository.ts';

/** Whether a request authenticates with an API key (a Bearer header, or no session cookie) rather than its session. */
function usesKey(c: PresentedCredentials): boolean {
  return BEARER_SCHEME.test(c.authorization) || c.sessionTokens.length === 0;
}

/** Resolves a presented bearer key to its owner, or throws `unauthorized()` (401). Implemented by the key store. */
export interface KeyAuthenticator {
  authenticate(presented: string | undefined): AuthenticatedKeyView;
  /** The same, and for a key unknown here once more after the records caught up (fresh-credentials.ts). */
  authenticateFresh(presented: string | undefined): AuthenticatedKeyView | Promise<AuthenticatedKeyView>;
}

export interface AuthenticatedKeyView {
  keyId: string;
  accountId: string;
  limits: KeyLimits;
}

/** Who makes a management request: an API key of an account, or a signed-in user of one. */
export type Principal =
  | { kind: 'key'; accountId: string; keyId: string }
  | { kind: 'session'; accountId: string; userId: string; role: UserRole; sessionEndsAt: number };

/** What the HTTP layer read from a management request (plain data: this layer knows no HTTP). */
export interface PresentedCredentials {
  /**
   * The Authorization header ('' when absent). When it is a Bearer header (well-formed or not) it decides,
   * and the cookie is not looked at; another scheme (a proxy's Basic credentials) is not Hearth's.
   */
  authorization: string;
  /** The Bearer token of that header, if it is one. */
  bearer: string | undefined;
  /**
   * The `hearth_session` cookie values, in the order sent (usually one; a cookie a sibling subdomain set for the
   * parent domain comes beside Hearth's own, and must not sign the user out: the first live one counts).
   */
  sessionTokens: readonly string[];
  /** Whether the request changes something (POST, PUT, PATCH, DELETE). */
  changes: boolean;
  /** Whether its Origin header names the service's own origin. */
  sameOrigin: boolean;
}

/** Whether an Authorization header uses the Bearer scheme (any case), with or without a usable token. */
const BEARER_SCHEME = /^bearer(?:[ \t]|$)/i;

/**
 * Authenticates `/api/v1` management requests: a Bearer API key, or else the session cookie. A request
 * made with the cookie that changes something must come from the service's own origin (CSRF), else 403
 * `origin_mismatch`. A cookie whose session ended, or whose user was removed, is 401 `session_expired`;
 * nothing presented is 401 `invalid_api_key`. The user's role is read on every request, so a role change
 * or removal applies at once. Main thread.
 */
export class ManagementAuthenticator {
  constructor(
    private readonly keys: KeyAuthenticator,
    private readonly sessions: SessionRepository,
    private readonly users: UserRepository,
    /** RecordStore.current, where the records can be behind another replica's (PostgreSQL); absent on LMDB. */
    private readonly current?: () => Promise<void>,
  ) {}

  /**
   * The caller of a management request, read from records current with the whole fleet: where the store can be
   * behind (`current` given), it first waits for RecordStore.current (one catch-up query, shared by the requests
   * waiting together), so the credentials, and everything the handler reads after, see every replica's writes:
   * a workspace made elsewhere a moment ago is found, a list is whole, a key revoked elsewhere is refused. None,
   * or a malformed key, could exist nowhere: a 401 at once, with no query. On LMDB: synchronous.
   */
  authenticateFresh(c: PresentedCredentials): Principal | Promise<Principal> {
    const couldExist = !usesKey(c) || (c.bearer !== undefined && parseCredential('hk', c.bearer) !== null);
    if (!couldExist || this.current === undefined) return this.authenticate(c);
    return this.current().then(() => this.authenticate(c));
  }

  authenticate(c: PresentedCredentials): Principal {
    if (usesKey(c)) {
      const k = this.keys.authenticate(c.bearer);
      return { kind: 'key', accountId: k.accountId, keyId: k.keyId };
    }
    let session: ReturnType<SessionRepository['resolve']> = null;
    let user: ReturnType<UserRepository['get']>;
    for (const token of c.sessionTokens) {
      session = this.sessions.resolve(token);
      user = session ? this.users.get(session.userId) : undefined;
      if (session && user && user.accountId === session.accountId) break;
      session = null;
    }
    if (!session || !user) throw sessionExpired();
    if (c.changes && !c.sameOrigin) throw originMismatch();
    return {
      kind: 'session',
      accountId: user.accountId,
      userId: user.id,
      role: user.role,
      sessionEndsAt: session.endsAt,
    };
  }
}
