import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ConfirmButton, Field, FormFooter, StateBadge } from '../components/ui.tsx';
import { formatTime } from '../format.ts';
import { useAction, useChangeAction, useFields, useLoad } from '../hooks.ts';
import { ResourceTable } from '../components/resource-table.tsx';
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
  const remove = useChangeAction(() => users.reload());
  return (
    <section aria-labelledby="users-title">
      <h1 id="users-title">Users</h1>
      <AddUserForm onAdded={() => void users.reload()} />
      <ResourceTable
        label="Users"
        list={users}
        actionError={remove.error}
        columns={[
          {
            header: 'Email',
            cell: (u) => (
              <>
                {u.email} {u.email === self.email && <span class="muted">(you)</span>}
              </>
            ),
          },
          { header: 'Role', cell: (u) => <StateBadge state={u.role} /> },
          { header: 'Added', cell: (u) => formatTime(u.createdAt), class: 'nowrap' },
          {
            header: 'Last sign-in',
            cell: (u) => (u.lastSignInAt ? formatTime(u.lastSignInAt) : 'never'),
            class: 'nowrap',
          },
        ]}
        actions={(u) =>
          u.email !== self.email && (
            <ConfirmButton
              label={`Remove ${u.email}`}
              confirmLabel={`Confirm removing ${u.email}`}
              onConfirm={() => remove.change(() => api('DELETE', `/api/v1/users/${encodeURIComponent(u.id)}`))}
            />
          )
        }
      />
    </section>
  );
}

function AddUserForm({ onAdded }: { onAdded: () => void }) {
  const form = useFields({ email: '', password: '' });
  const { email, password } = form.values;
  const [role, setRole] = useState<Role>('member');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await api('POST', '/api/v1/users', { body: { email: email.trim(), password, role } });
      form.reset();
      onAdded();
    });
  };
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="Add a user">
      <Field label="User email">
        <input type="email" required autoComplete="off" {...form.bind('email')} />
      </Field>
      <Field label="Initial password" hint="Give it to them privately.">
        <input type="password" required autoComplete="new-password" {...form.bind('password')} />
      </Field>
      <Field label="Role">
        <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          <option value="member">member</option>
          <option value="owner">owner</option>
        </select>
      </Field>
      <FormFooter label="Add user" action={action} />
    </form>
  );
}
