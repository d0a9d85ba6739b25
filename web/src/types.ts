/**
 * The shapes the dashboard reads from /api/v1 (docs/management-api.md). The views the service defines in a module
 * free of runtime imports are imported from it, type-only (erased from the bundle): the compiler keeps the two sides
 * one contract.
 */
export type { AppRunState, AppView, DeploymentView } from '../../src/apps/app-view-types.ts';
export type { KeyLimits, KeyPriority, UserRole as Role } from '../../src/store/records.ts';
export type { ApiKeyView, CreatedApiKey as CreatedKey, UserView, WhoAmI } from '../../src/accounts/account-views.ts';
export type { ModelView } from '../../src/inference/model-view-types.ts';
import type { UserView } from '../../src/accounts/account-views.ts';
export type {
  ProjectView,
  ProjectViewWithToken as ProjectWithToken,
  WorkspaceView,
  YamView,
} from '../../src/workspaces/workspace-views.ts';

export interface ListOf<T> {
  object: 'list';
  data: T[];
}

/** The signed-in user as the dashboard keeps it: the session's user, with the session's role (web/src/session.ts). */
export type SessionUser = Pick<UserView, 'id' | 'email' | 'role' | 'accountId'>;

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
