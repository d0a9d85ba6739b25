import type { AppRecord, DeploymentRecord, DeploymentSource, DeploymentState } from '../store/database.ts';
import type { AppRunState } from './app-runtime.ts';
import { maskUrlCredentials } from './deployment-builder.ts';

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

const BUILD_LOG_LINES = 100;

export function appView(a: AppRecord, state: AppRunState, baseUrl: string): AppView {
  return {
    appId: a.id,
    workspaceId: a.workspaceId,
    name: a.name,
    state,
    url: `${baseUrl}/apps/${encodeURIComponent(a.id)}/`,
    envNames: Object.keys(a.env).sort(),
    apiKeyEnv: a.apiKeyEnv,
    healthPath: a.healthPath,
    liveDeploymentId: a.liveDeploymentId,
    createdAt: a.createdAt,
    updatedAt: a.updatedAt,
  };
}

export function deploymentView(d: DeploymentRecord): DeploymentView {
  const lines = d.buildLog === '' ? [] : d.buildLog.replace(/\n$/, '').split('\n');
  return {
    deploymentId: d.id,
    appId: d.appId,
    state: d.state,
    reason: d.reason,
    source: d.source.kind === 'repository' ? { ...d.source, repository: maskUrlCredentials(d.source.repository) } : d.source,
    codeFrom: d.codeFrom,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    liveAt: d.liveAt,
    buildLog: lines.slice(-BUILD_LOG_LINES),
  };
}
