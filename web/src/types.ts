/** The shapes the dashboard reads from /api/v1 (docs/management-api.md, "Accounts"). */
export interface ListOf<T> {
  object: 'list';
  data: T[];
}

export type Role = 'owner' | 'member';

/** The signed-in user, from GET /api/v1/session. */
export interface SessionUser {
  id: string;
  email: string;
  role: Role;
  accountId: string;
}

/** `User` of docs/management-api.md. */
export interface UserView {
  id: string;
  email: string;
  role: Role;
  accountId: string;
  createdAt: string;
  lastSignInAt: string | null;
}

export interface KeyLimits {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  maxConcurrent: number | null;
  /** Scheduling: interactive work runs first; batch work yields its slot to it (docs/scheduler.md). */
  priority?: KeyPriority;
}

export type KeyPriority = 'interactive' | 'batch';

export interface ApiKeyView {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  limits?: KeyLimits | null;
}

export interface CreatedKey extends ApiKeyView {
  key: string;
}

export interface YamView {
  workspaceId: string;
  state: 'creating' | 'ready' | 'failed';
  createdAt: string;
  readyAt: string | null;
  error: string | null;
}

export interface WorkspaceView {
  workspaceId: string;
  name: string;
  createdAt: string;
  yam: YamView | null;
}

export type Provider = 'openai' | 'anthropic' | 'gemini' | 'mistral';
export const PROVIDERS: readonly Provider[] = ['openai', 'anthropic', 'gemini', 'mistral'];

export interface ProjectView {
  projectId: string;
  workspaceId: string;
  name: string;
  provider: Provider;
  model: string;
  temperature: number | null;
  state: 'provisioning' | 'ready' | 'suspended' | 'failed';
  stateReason: string | null;
  endpoint: string;
  providerKey: { last4: string } | null;
  tokenIssuedAt: string;
  createdAt: string;
}

export interface ProjectWithToken extends ProjectView {
  token: string;
}

export interface AppView {
  appId: string;
  workspaceId: string;
  name: string;
  state: string;
  url: string;
  envNames: string[];
  apiKeyEnv: string | null;
  healthPath: string;
  liveDeploymentId: string | null;
  createdAt: string;
}

export interface DeploymentView {
  deploymentId: string;
  appId: string;
  state: 'queued' | 'fetching' | 'building' | 'starting' | 'live' | 'failed' | 'retired';
  reason: string | null;
  createdAt: string;
  liveAt: string | null;
  /** The last lines of the build log. */
  buildLog: string[];
}

export interface AppLogLine {
  time: string;
  stream: 'stdout' | 'stderr' | string;
  deploymentId?: string;
  line: string;
}

/** GET /health (public). */
export interface HealthView {
  ok: boolean;
  state: 'pulling' | 'loading' | 'ready' | 'failed' | string;
  model: string;
  /** Which token engine, and where it computes (backend 'cpu' or a GPU backend such as 'cuda'). */
  engine?: { kind: string; backend: string; devices: string[]; gpuLayers: number } | null;
  workers?: { ready: number; total: number };
  requests?: { running?: number; waiting?: number };
  pull?: { downloaded_bytes: number; total_bytes: number | null; percent: number };
  error?: string;
  hint?: string;
}

/** A model as GET /api/v1/models shows it (docs/models.md). */
export interface ModelView {
  id: string;
  object: 'model';
  source: string;
  state: 'unloaded' | 'pulling' | 'loading' | 'ready' | 'failed';
  error: string | null;
  pull: { downloaded_bytes: number; total_bytes: number; percent: number } | null;
  memory_bytes: number;
  context_length: number | null;
  slots: number | null;
  engine: string | null;
  requests: { running: number; waiting: number };
  usage: { requests: number; completion_tokens: number; tokens_per_second: number };
  last_used_at: string | null;
  loads: number;
}

/** A Batch API batch as GET /api/v1/batches lists it (OpenAI's Batch object). */
export interface BatchView {
  id: string;
  endpoint: string;
  status: string;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  request_counts: { total: number; completed: number; failed: number };
  /** OpenAI's `errors`: a failed validation's lines, or why the batch stopped (api_key_revoked). */
  errors: { data: Array<{ code: string; message: string }> } | null;
}
