/**
 * The dashboard's client-side paths. The server answers each of these with index.html
 * (src/dashboard/dashboard-routes.ts); test/unit/dashboard/dashboard-routes.test.ts checks both lists agree.
 * Pure: no DOM, importable from Node.
 */
export const PAGE_PATTERNS = {
  overview: '/',
  signIn: '/sign-in',
  setup: '/setup',
  keys: '/settings/keys',
  users: '/settings/users',
  models: '/models',
  workspaces: '/workspaces',
  workspace: '/workspaces/:workspaceId',
  playground: '/playground',
  batches: '/batches',
} as const;

export type PageName = keyof typeof PAGE_PATTERNS;

export interface Match {
  page: PageName;
  params: Record<string, string>;
}

/** The page a path shows, with its parameters; null for an unknown path. */
export function matchPath(path: string): Match | null {
  const parts = path.split('/').filter(Boolean);
  for (const [page, pattern] of Object.entries(PAGE_PATTERNS) as Array<[PageName, string]>) {
    const want = pattern.split('/').filter(Boolean);
    if (want.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < want.length; i++) {
      const w = want[i]!;
      const p = parts[i]!;
      if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(p);
      else if (w !== p) ok = false;
    }
    if (ok) return { page, params };
  }
  return null;
}
