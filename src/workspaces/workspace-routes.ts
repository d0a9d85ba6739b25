import { authenticatedRoutes, type AuthenticatedRouteDeps } from '../accounts/authenticated-route.ts';
import type { Route } from '../http/router.ts';
import type { WorkspaceService } from './workspace-service.ts';

export interface WorkspaceRouteDeps extends AuthenticatedRouteDeps {
  workspaces: WorkspaceService;
}

/** Workspaces, their Yam and their inference projects under /api/v1/workspaces (201 for a creation, and for a PUT .../yam that started one). */
export function workspaceRoutes(d: WorkspaceRouteDeps): Route[] {
  const m = d.workspaces;
  const { route, ok, created } = authenticatedRoutes(d);
  const WS = '/api/v1/workspaces/:workspaceId';
  const PROJECT = `${WS}/inference/:projectId`;

  return [
    route('POST', '/api/v1/workspaces', 'workspaces', true, async (c) =>
      created(await m.createWorkspace(c.accountId, c.body)),
    ),
    route('GET', '/api/v1/workspaces', 'workspaces', false, (c) => ok(m.listWorkspaces(c.accountId))),
    route('GET', WS, 'workspace', false, (c) => ok(m.getWorkspace(c.accountId, c.params[0]!))),
    route('DELETE', WS, 'workspace', false, async (c) => ok(await m.deleteWorkspace(c.accountId, c.params[0]!))),
    route('PUT', `${WS}/yam`, 'yam', false, async (c) => {
      const r = await m.putYam(c.accountId, c.params[0]!);
      return { status: r.created ? 201 : 200, value: r.yam };
    }),
    route('GET', `${WS}/yam`, 'yam', false, (c) => ok(m.getYam(c.accountId, c.params[0]!))),

    route('POST', `${WS}/inference`, 'projects', true, async (c) =>
      created(await m.createProject(c.accountId, c.params[0]!, c.body)),
    ),
    route('GET', `${WS}/inference`, 'projects', false, (c) => ok(m.listProjects(c.accountId, c.params[0]!))),
    route('GET', PROJECT, 'project', false, (c) => ok(m.getProject(c.accountId, c.params[0]!, c.params[1]!))),
    route('PATCH', PROJECT, 'project', true, async (c) =>
      ok(await m.updateProject(c.accountId, c.params[0]!, c.params[1]!, c.body)),
    ),
    route('DELETE', PROJECT, 'project', false, async (c) =>
      ok(await m.deleteProject(c.accountId, c.params[0]!, c.params[1]!)),
    ),
    route('POST', `${PROJECT}/token`, 'project_token', false, async (c) =>
      ok(await m.rotateToken(c.accountId, c.params[0]!, c.params[1]!)),
    ),
  ];
}
