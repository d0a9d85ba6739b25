import type { KeyLimits, UserRole } from '../store/records.ts';

/**
 * What the API and CLI show of users, keys and the caller's session, free of any runtime import: the services,
 * the CLI and the dashboard (web/, type-only) share them.
 */

/** A user: never the password hash. */
export interface UserView {
  id: string;
  email: string;
  role: UserRole;
  accountId: string;
  createdAt: string;
  lastSignInAt: string | null;
}

/** An API key: never the secret or its hash. */
export interface ApiKeyView {
  id: string;
  name: string;
  accountId: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  limits: Required<KeyLimits>;
}

/** POST /api/v1/keys. */
export interface CreatedApiKey extends ApiKeyView {
  /** The whole key; shown once. */
  key: string;
}

/** GET /api/v1/session. */
export interface WhoAmI {
  auth: 'session' | 'key';
  accountId: string;
  user: UserView | null;
  role: UserRole | null;
  expiresAt: string | null;
}
