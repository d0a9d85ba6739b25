import type { DeploymentSource, DeploymentState } from '../store/records.ts';

/**
 * The app views' types, free of any runtime import: the API, the CLI and the dashboard (web/, type-only) share them.
 */

/** Where an app's process stands (app-runtime.ts). */
export type AppRunState = 'created' | 'starting' | 'running' | 'crashed' | 'stopped';

/** What the API and CLI show of apps and deployments: env names, never values; never the app's key; repository URLs without credentials. Pure. */
export interface AppView {
  appId: string;
  workspaceId: string;
  name: string;
  state: AppRunState;
  /** `{base_url}/apps/{appId}/` */
  url: string;
  envNames: string[];
  apiKeyEnv: string | null;
  healthPath: string;
  liveDeploymentId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DeploymentView {
  deploymentId: string;
  appId: string;
  state: DeploymentState;
  reason: string | null;
  source: DeploymentSource;
  /** The deployment whose build this release runs. */
  codeFrom: string;
  createdAt: string;
  updatedAt: string;
  liveAt: string | null;
  /** The last lines of the build log. */
  buildLog: string[];
}
