import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onSignedOut } from './api.ts';
import { navigate, onLinkClick, useLocation } from './navigation.ts';
import { KeysPage } from './pages/keys-page.tsx';
import { OverviewPage } from './pages/overview-page.tsx';
import { PlaygroundPage } from './pages/playground-page.tsx';
import { SetupPage } from './pages/setup-page.tsx';
import { SignInPage } from './pages/sign-in-page.tsx';
import { UsersPage } from './pages/users-page.tsx';
import { ModelsPage } from './pages/models-page.tsx';
import { BatchesPage } from './pages/batches-page.tsx';
import { WorkspacePage } from './pages/workspace-page.tsx';
import { WorkspacesPage } from './pages/workspaces-page.tsx';
import { matchPath } from './routes.ts';
import { fetchSession, signOut } from './session.ts';
import type { SessionUser } from './types.ts';
import './styles.css';

const PUBLIC_PAGES = new Set(['signIn', 'setup']);

function App() {
  const { path, query } = useLocation();
  const [user, setUser] = useState<SessionUser | null | undefined>(undefined);
  const [flash, setFlash] = useState<string | null>(null);
  const match = matchPath(path);

  useEffect(() => {
    onSignedOut(() => {
      setUser(null);
      setFlash('Your session has expired. Sign in again.');
    });
    void fetchSession().then(setUser);
  }, []);

  const isPublic = match !== null && PUBLIC_PAGES.has(match.page);
  useEffect(() => {
    if (user && match?.page === 'signIn') navigate('/', true); // already signed in
    if (user === null && !isPublic)
      navigate(`/sign-in${path === '/' ? '' : `?next=${encodeURIComponent(path)}`}`, true);
  }, [user, isPublic, path, match?.page]);

  useEffect(() => {
    document.title = `${match ? TITLES[match.page] : 'Not found'} · Hearth`;
  }, [match?.page]);

  if (match?.page === 'setup') return <SetupPage token={query.get('token') ?? ''} onSignedIn={setUser} />;
  if (match?.page === 'signIn')
    return (
      <SignInPage
        flash={flash}
        onSignedIn={(u) => {
          setFlash(null);
          setUser(u);
          const next = query.get('next');
          navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/', true);
        }}
      />
    );
  if (user === undefined)
    return (
      <p class="loading" role="status">
        Loading…
      </p>
    );
  if (user === null) return null;

  return (
    <div class="shell" onClick={onLinkClick}>
      <header class="topbar">
        <a class="brand" href="/">
          Hearth
        </a>
        <nav aria-label="Main">
          <NavLink href="/" label="Overview" active={match?.page === 'overview'} />
          <NavLink
            href="/workspaces"
            label="Workspaces"
            active={match?.page === 'workspaces' || match?.page === 'workspace'}
          />
          <NavLink href="/models" label="Models" active={match?.page === 'models'} />
          <NavLink href="/playground" label="Playground" active={match?.page === 'playground'} />
          <NavLink href="/batches" label="Batches" active={match?.page === 'batches'} />
          <NavLink href="/settings/keys" label="API keys" active={match?.page === 'keys'} />
          <NavLink href="/settings/users" label="Users" active={match?.page === 'users'} />
        </nav>
        <div class="who">
          <span>
            {user.email} <span class="muted">({user.role})</span>
          </span>
          <button
            type="button"
            class="secondary"
            onClick={async () => {
              await signOut().catch(() => {});
              setUser(null);
              setFlash('You are signed out.');
              navigate('/sign-in', true);
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main>
        {match === null && <NotFound />}
        {match?.page === 'overview' && <OverviewPage />}
        {match?.page === 'keys' && <KeysPage />}
        {match?.page === 'users' && <UsersPage user={user} />}
        {match?.page === 'models' && <ModelsPage user={user} />}
        {match?.page === 'workspaces' && <WorkspacesPage />}
        {match?.page === 'workspace' && <WorkspacePage workspaceId={match.params.workspaceId!} />}
        {match?.page === 'playground' && <PlaygroundPage />}
        {match?.page === 'batches' && <BatchesPage />}
      </main>
    </div>
  );
}

const TITLES: Record<string, string> = {
  overview: 'Overview',
  signIn: 'Sign in',
  setup: 'Set up',
  keys: 'API keys',
  users: 'Users',
  models: 'Models',
  workspaces: 'Workspaces',
  workspace: 'Workspace',
  playground: 'Playground',
  batches: 'Batches',
};

function NavLink({ href, label, active }: { href: string; label: string; active: boolean }) {
  return (
    <a href={href} aria-current={active ? 'page' : undefined}>
      {label}
    </a>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <a href="/">Back to the overview</a>
      </p>
    </section>
  );
}

render(<App />, document.getElementById('app')!);
