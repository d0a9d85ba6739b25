import type { RegistryState } from '../engine/registry-state.ts';

/**
 * A model as the admin API shows it (GET /api/v1/models, docs/models.md), free of any runtime import: the API and
 * the dashboard (web/, type-only) share it.
 */
export interface ModelView {
  id: string;
  object: 'model';
  /** The hub URI or the local path it was registered from. */
  source: string;
  state: RegistryState;
  error: string | null;
  pull: { downloaded_bytes: number; total_bytes: number; percent: number } | null;
  memory_bytes: number;
  context_length: number | null;
  slots: number | null;
  /** The engine serving it, while ready. */
  engine: string | null;
  requests: { running: number; waiting: number };
  usage: { requests: number; completion_tokens: number; tokens_per_second: number };
  last_used_at: string | null;
  loads: number;
}
