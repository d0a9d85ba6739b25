import { useEffect, useState } from 'preact/hooks';
import { ApiFailure } from '../api.ts';
import { ErrorNote, Field, Note } from '../components/ui.tsx';
import { useAction, useFields } from '../hooks.ts';
import { fetchSession, setupRequired, signIn } from '../session.ts';
import type { SessionUser } from '../types.ts';

/** Email + password -> POST /api/v1/session (cookie), then the session's user. */
export function SignInPage({ flash, onSignedIn }: { flash: string | null; onSignedIn: (u: SessionUser) => void }) {
  const form = useFields({ email: '', password: '' });
  const { email, password } = form.values;
  const [needsSetup, setNeedsSetup] = useState(false);
  const action = useAction();
  useEffect(() => {
    void setupRequired().then(setNeedsSetup);
  }, []);
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await signIn(email.trim(), password);
      const u = await fetchSession();
      if (!u) throw new Error('Signed in, but the session was not kept: are cookies blocked for this site?');
      form.reset(['password']);
      onSignedIn(u);
    });
  };
  const retry = action.error instanceof ApiFailure && action.error.status === 429 && action.error.retryAfter;
  return (
    <main class="auth">
      <form class="card auth-card" onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Sign in to Hearth</h1>
        {flash && <Note>{flash}</Note>}
        {needsSetup && (
          <Note tone="warn">
            This Hearth has no user yet. Open the one-time setup link the server printed in its log at start (the line
            "first-run setup: open this link to create the first owner", <code>…/setup?token=…</code>), or run{' '}
            <code>npx hearth users create --email you@example.com --account default --role owner</code> on the server.
          </Note>
        )}
        <Field label="Email">
          <input type="email" autoComplete="username" required {...form.bind('email')} />
        </Field>
        <Field label="Password">
          <input type="password" autoComplete="current-password" required {...form.bind('password')} />
        </Field>
        <ErrorNote error={action.error} />
        {retry && <p class="muted">Try again in {retry} s.</p>}
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="muted small">
          Forgot the password? An owner can add you again; or run <code>npx hearth users create</code> on the server.
        </p>
      </form>
    </main>
  );
}
