import { authenticatedRoutes, type AuthenticatedRouteDeps } from '../accounts/authenticated-route.ts';
import type { Route } from '../http/router.ts';
import type { ServingStats } from './serving-stats.ts';

export interface StatsRouteDeps extends AuthenticatedRouteDeps {
  stats: ServingStats;
}

/** GET /api/v1/stats: the dashboard's live serving figures, for any signed-in caller. */
export function statsRoutes(d: StatsRouteDeps): Route[] {
  const { route, ok } = authenticatedRoutes(d);
  return [route('GET', '/api/v1/stats', 'stats', false, () => ok(d.stats.snapshot()))];
}
