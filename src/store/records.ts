/** The records Hearth keeps, one interface per kind: plain JSON-serialisable data, whichever store holds them. */

/**
 * A Responses API response kept for `previous_response_id` and `GET /responses/{id}` until `expiresAt`. The
 * shapes inside are the inference feature's (JSON objects here): the Response object as answered, its input
 * items, and the conversation so far as chat messages (every earlier turn's input and output, this one's too;
 * never `instructions`, which OpenAI does not carry over).
 */
export interface StoredResponseRecord {
  id: string;
  accountId: string;
  createdAt: string;
  expiresAt: string;
  /**
   * The Response object as JSON text (LMDB's msgpack reads a key '__proto__' back as '__proto_', and a tool's or a
   * format's schema may have one); an object in records written before 2026-11-28.
   */
  response: Record<string, unknown> | string;
  inputItems: Record<string, unknown>[];
  history: Record<string, unknown>[];
}

export interface AccountRecord {
  id: string;
  name: string;
  createdAt: string;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  secretHash: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** Per-key limits on the shared endpoint; absent on records written before limits existed (= unlimited). */
  limits?: KeyLimits;
}

/** Per-key limits (contract "Per-key limits"); null = unlimited. */
export interface KeyLimits {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  maxConcurrent: number | null;
  /**
   * Where the key's generations are scheduled (contract "Fair share and priority between tenants"): `interactive`
   * before `batch`. Absent on records written before priorities existed (= interactive).
   */
  priority?: KeyPriority;
}

/** A key's scheduling priority (protocol/priority.ts is the request side of the same two values). */
export type KeyPriority = 'interactive' | 'batch';

export type UserRole = 'owner' | 'member';

export interface UserRecord {
  id: string;
  accountId: string;
  /** Trimmed and lower-cased; unique across the service (index `userEmail`). */
  email: string;
  role: UserRole;
  /** `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>` (password-hash.ts). */
  passwordHash: string;
  createdAt: string;
  lastSignInAt: string | null;
}

export interface SessionRecord {
  userId: string;
  accountId: string;
  createdAt: string;
  /** Last request seen (written at a bounded rate); idle expiry counts from here. */
  lastSeenAt: string;
  /** Absolute expiry. */
  expiresAt: string;
}

export interface SetupTokenRecord {
  createdAt: string;
  expiresAt: string;
}

export type YamState = 'creating' | 'ready' | 'failed';
export type ProjectState = 'provisioning' | 'ready' | 'suspended' | 'failed';

/** A workspace's Yam (its application host). Created by PUT .../yam; `creating` -> `ready` (or `failed`). */
export interface YamRecord {
  state: YamState;
  createdAt: string;
  readyAt: string | null;
  /** Why the Yam failed; null otherwise. */
  error: string | null;
}

export interface WorkspaceRecord {
  id: string;
  accountId: string;
  name: string;
  createdAt: string;
  yam: YamRecord | null;
}

/**
 * An AES-256-GCM envelope (provider-key-cipher.ts): base64 `iv` (12 bytes), `tag` (16 bytes) and `data`;
 * the associated data binds it to one record, so an envelope copied to another record does not decrypt.
 * `last4` is the only part of the plaintext the API shows.
 */
export interface EncryptedSecret {
  v: 1;
  iv: string;
  tag: string;
  data: string;
  last4: string;
}

export interface ProjectRecord {
  id: string;
  workspaceId: string;
  accountId: string;
  name: string;
  /** One of openai, anthropic, gemini, mistral (validated by the gateway). */
  provider: string;
  model: string;
  temperature: number | null;
  state: ProjectState;
  /** Why the project is failed or suspended; null otherwise. */
  stateReason: string | null;
  /** The provider key, encrypted under the master key; null means "not stored" (provider_configuration_missing). */
  providerKey: EncryptedSecret | null;
  /** Public id of the current bearer token (`hp_<tokenId>_<secret>`); index entry `projectToken(tokenId, id)`. */
  tokenId: string;
  /** hex SHA-256 of the current token's secret. */
  tokenHash: string;
  tokenIssuedAt: string;
  createdAt: string;
  updatedAt: string;
}

/** An application on a workspace's Yam (contract.md "Applications on the Yam"); its run state lives in apps/. */
export interface AppRecord {
  id: string;
  workspaceId: string;
  accountId: string;
  name: string;
  /** Variable name -> its value encrypted under the master key (bound to the app id and the name). */
  env: Record<string, EncryptedSecret>;
  /** The variable that receives the app's Hearth API key; null = no key. */
  apiKeyEnv: string | null;
  /** The app's own API key (`app:<appId>` among the account's keys): its id, and the whole key encrypted. */
  apiKeyId: string | null;
  apiKey: EncryptedSecret | null;
  healthPath: string;
  /** The deployment that takes traffic; null until one went live. */
  liveDeploymentId: string | null;
  createdAt: string;
  updatedAt: string;
}

export type DeploymentState = 'queued' | 'fetching' | 'building' | 'starting' | 'live' | 'failed' | 'retired';

/** Where a deployment's code came from: an uploaded archive, a git repository, or an earlier build (env change, rollback). */
export type DeploymentSource =
  | { kind: 'archive'; bytes: number }
  | { kind: 'repository'; repository: string; ref: string | null; commit: string | null }
  | { kind: 'release'; from: string; why: 'env' | 'rollback' | 'config' };

/** One immutable release of an app. `codeFrom` is the deployment whose build directory holds its code. */
export interface DeploymentRecord {
  id: string;
  appId: string;
  workspaceId: string;
  accountId: string;
  source: DeploymentSource;
  codeFrom: string;
  state: DeploymentState;
  /** Why it failed (`build_failed: ...`, `health_check_failed: ...`); null otherwise. */
  reason: string | null;
  /** The last part of the build log (fetch, install, build, start checks). */
  buildLog: string;
  createdAt: string;
  updatedAt: string;
  liveAt: string | null;
}

/**
 * The record each table of the store holds by its id, by table name: the one list of tables that RecordTables
 * (record-store.ts) and the LMDB databases (database.ts) are made from.
 */
export interface TableRecords {
  accounts: AccountRecord;
  apiKeys: ApiKeyRecord;
  workspaces: WorkspaceRecord;
  projects: ProjectRecord;
  /** Applications on Yams and their deployments (apps/app-repository.ts). */
  apps: AppRecord;
  deployments: DeploymentRecord;
  /** People who sign in (accounts/user-repository.ts). */
  users: UserRecord;
  /** Dashboard sessions, keyed by the hex SHA-256 of the cookie value (accounts/session-repository.ts). */
  sessions: SessionRecord;
  /** First-run setup tokens, keyed by the hex SHA-256 of the token (accounts/user-repository.ts). */
  setupTokens: SetupTokenRecord;
  /** Stored Responses API responses (inference/response-repository.ts), by response id. */
  responses: StoredResponseRecord;
}

/** A key of the secondary index: `[kind, ownerId, recordId]` (database.ts indexKeys). */
export type IndexKey = (string | number)[];
