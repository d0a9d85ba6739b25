/**
 * The shapes the dashboard reads from /api/v1 (docs/management-api.md). The views the service defines in a module
 * free of runtime imports are imported from it, type-only (erased from the bundle): the compiler keeps the two sides
 * one contract.
 */
export type { AppRunState, AppView, DeploymentView } from '../../src/apps/app-view-types.ts';
export type { KeyLimits, KeyPriority } from '../../src/store/records.ts';
export type {
  ProjectView,
  ProjectViewWithToken as ProjectWithToken,
  WorkspaceView,
  YamView,
} from '../../src/workspaces/workspace-views.ts';
import type { KeyLimits } from '../../src/store/records.ts';

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

export type Provider = 'openai' | 'anthropic' | 'gemini' | 'mistral';
export const PROVIDERS: readonly Provider[] = ['openai', 'anthropic', 'gemini', 'mistral'];

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
