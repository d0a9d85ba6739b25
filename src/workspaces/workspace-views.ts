import type { ProjectRecord, WorkspaceRecord, YamState } from '../store/records.ts';

/**
 * What the management API (and the CLI) shows of records: ids named `workspaceId` / `projectId`, the
 * provider key as its last four characters only, never a token hash or an encrypted envelope. Pure.
 */
export interface YamView {
  workspaceId: string;
  state: YamState;
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

/** The stored fields a project view shows as they are (the record's types and comments are the contract). */
type ProjectShownField =
  | 'workspaceId'
  | 'name'
  | 'provider'
  | 'model'
  | 'temperature'
  | 'state'
  | 'stateReason'
  | 'tokenIssuedAt'
  | 'createdAt'
  | 'updatedAt';

export interface ProjectView extends Pick<ProjectRecord, ProjectShownField> {
  projectId: string;
  /** `{base_url}/api/v1/inference/{projectId}/chat/completions` */
  endpoint: string;
  providerKey: { last4: string } | null;
}

/** A project view with the plaintext bearer token: the answer to creation and rotation only. */
export interface ProjectViewWithToken extends ProjectView {
  token: string;
}

export function yamView(ws: WorkspaceRecord): YamView | null {
  return (
    ws.yam && {
      workspaceId: ws.id,
      state: ws.yam.state,
      createdAt: ws.yam.createdAt,
      readyAt: ws.yam.readyAt,
      error: ws.yam.error,
    }
  );
}

export function workspaceView(ws: WorkspaceRecord): WorkspaceView {
  return { workspaceId: ws.id, name: ws.name, createdAt: ws.createdAt, yam: yamView(ws) };
}

/** The per-project endpoint URL under `baseUrl` (no trailing slash). */
export function projectEndpoint(baseUrl: string, projectId: string): string {
  return `${baseUrl}/api/v1/inference/${encodeURIComponent(projectId)}/chat/completions`;
}

export function projectView(p: ProjectRecord, baseUrl: string): ProjectView {
  return {
    projectId: p.id,
    workspaceId: p.workspaceId,
    name: p.name,
    provider: p.provider,
    model: p.model,
    temperature: p.temperature,
    state: p.state,
    stateReason: p.stateReason,
    endpoint: projectEndpoint(baseUrl, p.id),
    providerKey: p.providerKey && { last4: p.providerKey.last4 },
    tokenIssuedAt: p.tokenIssuedAt,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}
