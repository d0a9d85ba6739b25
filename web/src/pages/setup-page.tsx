import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ErrorNote, Field, Note } from '../components/ui.tsx';
import { useAction, useFields } from '../hooks.ts';
import { navigate } from '../navigation.ts';
import { fetchSession, signIn } from '../session.ts';
import type { SessionUser } from '../types.ts';

/** First run: the one-time link's token + the owner's email and password -> POST /api/v1/setup, then sign in. */
export function SetupPage({ token, onSignedIn }: { token: string; onSignedIn: (u: SessionUser) => void }) {
  const form = useFields({ email: '', password: '', confirm: '' });
  const { email, password, confirm } = form.values;
  const [mismatch, setMismatch] = useState<string | null>(null);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    if (password !== confirm) return setMismatch('The two passwords differ.');
    setMismatch(null);
    void action.run(async () => {
      await api('POST', '/api/v1/setup', { body: { token, email: email.trim(), password }, allowUnauthorized: true });
      let u = await fetchSession();
      if (!u) {
        await signIn(email.trim(), password);
        u = await fetchSession();
      }
      if (!u) throw new Error('The owner was created, but signing in failed: sign in on the next page.');
      onSignedIn(u);
      navigate('/', true);
    });
  };
  return (
    <main class="auth">
      <form class="card auth-card" onSubmit={submit} aria-labelledby="setup-title">
        <h1 id="setup-title">Set up Hearth</h1>
        <p class="muted">Create the owner of this Hearth. The setup link works once.</p>
        {token === '' && (
          <Note tone="warn">This page needs the setup link from Hearth's log (it ends in ?token=…).</Note>
        )}
        <Field label="Email">
          <input type="email" autoComplete="username" required {...form.bind('email')} />
        </Field>
        <Field label="Password" hint="8 characters or more.">
          <input type="password" autoComplete="new-password" required {...form.bind('password')} />
        </Field>
        <Field label="Confirm password">
          <input type="password" autoComplete="new-password" required {...form.bind('confirm')} />
        </Field>
        <ErrorNote error={mismatch} />
        <ErrorNote error={action.error} />
        <button type="submit" disabled={action.busy || token === ''}>
          {action.busy ? 'Creating…' : 'Create owner'}
        </button>
      </form>
    </main>
  );
}
