import type { ApiKeyRepository } from '../accounts/api-key-repository.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { WorkspaceRepository } from '../workspaces/workspace-repository.ts';
import type { AppRepository } from './app-repository.ts';
import type { RepositoryAccess } from './repository-policy.ts';
import type { SandboxOptions } from './sandbox.ts';

/** The app host's settings (app-host-config.ts reads them from the config), defaults in DEFAULT_APP_HOST_OPTIONS. */
export interface AppHostOptions {
  rootDir: string;
  sandbox: SandboxOptions;
  /** The address Hearth listens on (--host): where HEARTH_API_URL points in `--app-network host`. */
  listenHost: string;
  /** Largest accepted archive upload, bytes. */
  archiveLimit: number;
  maxFiles: number;
  maxUnpackedBytes: number;
  startTimeoutMs: number;
  /** Each build step (clone, install, build script). */
  buildTimeoutMs: number;
  /** Which repositories a deployment may fetch (repository-policy.ts). */
  repositories: RepositoryAccess;
  gracePeriodMs: number;
  stopTimeoutMs: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_APP_HOST_OPTIONS = {
  listenHost: '127.0.0.1',
  archiveLimit: 50 << 20,
  maxFiles: 10_000,
  maxUnpackedBytes: 512 << 20,
  startTimeoutMs: 60_000,
  buildTimeoutMs: 600_000,
  repositories: 'public',
  gracePeriodMs: 10_000,
  stopTimeoutMs: 5_000,
  backoffInitialMs: 1_000,
  backoffMaxMs: 60_000,
} satisfies Partial<AppHostOptions>;

export interface AppHostDeps {
  apps: AppRepository;
  keys: ApiKeyRepository;
  workspaces: WorkspaceRepository;
  metrics: Metrics;
  log: Logger;
  /** The base URL clients use, read when a view is built. */
  baseUrl: () => string;
  /** Hearth's public port (read at each launch, for HEARTH_API_URL); null until it listens. */
  apiPort: () => number | null;
}
