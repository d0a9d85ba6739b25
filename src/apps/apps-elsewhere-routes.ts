import { appHostUnavailable } from '../errors/index.ts';
import type { HttpMethod, Route } from '../http/router.ts';

/**
 * The app routes of a fleet replica started with `--app-host false` (docs/fleet.md "Apps in a fleet"): apps run on
 * the fleet's app host alone (their processes, release files and logs are there), so here every request to an app
 * (`/apps/{appId}...`) or to the apps API (`/api/v1/workspaces/{workspaceId}/apps...`) answers 503
 * `app_host_unavailable` with Retry-After, and no deployment is ever built on a replica that would not run it. The
 * fleet's HAProxy (deploy/haproxy/fleet.cfg) sends these paths to the app host; this answers those that arrive anyway.
 */
const METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const PATTERNS = [
  '/apps/:appId',
  '/apps/:appId/*',
  '/api/v1/workspaces/:workspaceId/apps',
  '/api/v1/workspaces/:workspaceId/apps/:appId',
  '/api/v1/workspaces/:workspaceId/apps/:appId/*',
];

export function appsElsewhereRoutes(): Route[] {
  return PATTERNS.flatMap((pattern) =>
    METHODS.map((method): Route => ({
      method,
      pattern,
      name: pattern.startsWith('/apps/') ? 'app_proxy' : 'apps_elsewhere',
      handler: () => {
        throw appHostUnavailable();
      },
    })),
  );
}
