import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ConfirmButton, ErrorNote, Field, StateBadge, formatTime, useAction, useLoad } from '../components/ui.tsx';
import type { ListOf, Role, SessionUser, UserView } from '../types.ts';

/** Settings -> Users: owners add and remove the account's users; a member is refused (and the API refuses too). */
export function UsersPage({ user }: { user: SessionUser }) {
  if (user.role !== 'owner')
    return (
      <section aria-labelledby="users-title">
        <h1 id="users-title">Users</h1>
        <p class="note error" role="alert">
          Only an owner of this account can manage users. Ask an owner to add or remove people.
        </p>
      </section>
    );
  return <OwnerUsers self={user} />;
}

function OwnerUsers({ self }: { self: SessionUser }) {
  const users = useLoad(() => api<ListOf<UserView>>('GET', '/api/v1/users'));
  const remove = useAction();
  return (
    <section aria-labelledby="users-title">
      <h1 id="users-title">Users</h1>
      <AddUserForm onAdded={() => void users.reload()} />
      <ErrorNote error={users.error ?? remove.error} />
      <table aria-label="Users">
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Added</th>
            <th scope="col">Last sign-in</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {users.data?.data.map((u) => (
            <tr key={u.id}>
              <td>
                {u.email} {u.email === self.email && <span class="muted">(you)</span>}
              </td>
              <td>
                <StateBadge state={u.role} />
              </td>
              <td class="nowrap">{formatTime(u.createdAt)}</td>
              <td class="nowrap">{u.lastSignInAt ? formatTime(u.lastSignInAt) : 'never'}</td>
              <td class="actions">
                {u.email !== self.email && (
                  <ConfirmButton
                    label={`Remove ${u.email}`}
                    confirmLabel={`Confirm removing ${u.email}`}
                    onConfirm={() =>
                      remove.run(async () => {
                        await api('DELETE', `/api/v1/users/${encodeURIComponent(u.id)}`);
                        await users.reload();
                      })
                    }
                  />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function AddUserForm({ onAdded }: { onAdded: () => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('member');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await api('POST', '/api/v1/users', { body: { email: email.trim(), password, role } });
      setEmail('');
      setPassword('');
      onAdded();
    });
  };
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="Add a user">
      <Field label="User email">
        <input type="email" required autoComplete="off" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </Field>
      <Field label="Initial password" hint="Give it to them privately.">
        <input type="password" required autoComplete="new-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      </Field>
      <Field label="Role">
        <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          <option value="member">member</option>
          <option value="owner">owner</option>
        </select>
      </Field>
      <div class="form-actions">
        <button type="submit" disabled={action.busy}>
          Add user
        </button>
      </div>
      <div class="span-all">
        <ErrorNote error={action.error} />
      </div>
    </form>
  );
}
