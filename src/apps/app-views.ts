import type { AppRecord, DeploymentRecord } from '../store/records.ts';
import type { AppRunState, AppView, DeploymentView } from './app-view-types.ts';
import { maskUrlCredentials } from './deployment-builder.ts';

export type { AppRunState, AppView, DeploymentView } from './app-view-types.ts';

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
    source:
      d.source.kind === 'repository' ? { ...d.source, repository: maskUrlCredentials(d.source.repository) } : d.source,
    codeFrom: d.codeFrom,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    liveAt: d.liveAt,
    buildLog: lines.slice(-BUILD_LOG_LINES),
  };
}
