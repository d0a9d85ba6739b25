import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ConfirmButton, Field, FormFooter, NameField, SecretOnce, StateBadge } from '../components/ui.tsx';
import { formatTime, optionalPositiveInt } from '../format.ts';
import { useAction, useChangeAction, useFields, useLoad } from '../hooks.ts';
import { ResourceTable } from '../components/resource-table.tsx';
import type { ApiKeyView, CreatedKey, KeyLimits, KeyPriority, ListOf } from '../types.ts';

/** Settings -> API keys: create (optional limits and priority; the key shown once), list with last use, change priority, revoke. */
export function KeysPage() {
  const keys = useLoad(() => api<ListOf<ApiKeyView>>('GET', '/api/v1/keys'));
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const revoke = useChangeAction(() => keys.reload());
  const reprioritize = useChangeAction(() => keys.reload());
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <p class="muted">
        Keys call the shared endpoint (<code>/api/inference/v1</code>) and the management API. Hearth stores only a
        hash: a key is shown once.
      </p>
      <CreateKeyForm
        onCreated={(k) => {
          setCreated(k);
          void keys.reload();
        }}
      />
      {created && <SecretOnce label="New API key" value={created.key} onDone={() => setCreated(null)} />}
      <ResourceTable
        label="API keys"
        list={keys}
        actionError={revoke.error ?? reprioritize.error}
        empty="No keys yet."
        columns={[
          { header: 'Name', cell: (k) => k.name },
          { header: 'Key id', cell: (k) => k.id, class: 'mono small' },
          { header: 'Limits', cell: (k) => describeLimits(k.limits), class: 'small' },
          { header: 'Priority', cell: (k) => priorityOf(k.limits) },
          { header: 'Created', cell: (k) => formatTime(k.createdAt), class: 'nowrap' },
          { header: 'Last used', cell: (k) => (k.lastUsedAt ? formatTime(k.lastUsedAt) : 'never'), class: 'nowrap' },
          { header: 'State', cell: (k) => <StateBadge state={k.revokedAt ? 'revoked' : 'active'} /> },
        ]}
        actions={(k) =>
          !k.revokedAt && (
            <>
              <button
                type="button"
                class="secondary small"
                disabled={reprioritize.busy}
                aria-label={`Make ${k.name} ${otherPriority(priorityOf(k.limits))}`}
                onClick={() =>
                  reprioritize.change(() =>
                    api('PATCH', `/api/v1/keys/${encodeURIComponent(k.id)}`, {
                      body: { limits: { priority: otherPriority(priorityOf(k.limits)) } },
                    }),
                  )
                }
              >
                Make {otherPriority(priorityOf(k.limits))}
              </button>
              <ConfirmButton
                label={`Revoke ${k.name}`}
                confirmLabel={`Confirm revoking ${k.name}`}
                disabled={revoke.busy}
                onConfirm={() => revoke.change(() => api('DELETE', `/api/v1/keys/${encodeURIComponent(k.id)}`))}
              />
            </>
          )
        }
      />
    </section>
  );
}

function CreateKeyForm({ onCreated }: { onCreated: (k: CreatedKey) => void }) {
  const form = useFields({ name: '', rpm: '', tpm: '', conc: '' });
  const { name, rpm, tpm, conc } = form.values;
  const [priority, setPriority] = useState<KeyPriority>('interactive');
  const [invalid, setInvalid] = useState<string | null>(null);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    const limits: KeyLimits = {
      requestsPerMinute: optionalPositiveInt(rpm),
      tokensPerMinute: optionalPositiveInt(tpm),
      maxConcurrent: optionalPositiveInt(conc),
    };
    const bad = Object.entries(limits).find(([, v]) => Number.isNaN(v));
    if (bad) return setInvalid('A limit is a whole number above 0, or empty for no limit.');
    setInvalid(null);
    const anyLimit = Object.values(limits).some((v) => v !== null) || priority !== 'interactive';
    void action.run(async () => {
      const k = await api<CreatedKey>('POST', '/api/v1/keys', {
        body: anyLimit ? { name: name.trim(), limits: { ...limits, priority } } : { name: name.trim() },
      });
      form.reset();
      setPriority('interactive');
      onCreated(k);
    });
  };
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="Create an API key">
      <NameField label="Key name" placeholder="ci" bind={form.bind('name')} />
      <Field label="Requests per minute" hint="Empty: no limit">
        <input inputMode="numeric" {...form.bind('rpm')} />
      </Field>
      <Field label="Tokens per minute" hint="Empty: no limit">
        <input inputMode="numeric" {...form.bind('tpm')} />
      </Field>
      <Field label="Concurrent requests" hint="Empty: no limit">
        <input inputMode="numeric" {...form.bind('conc')} />
      </Field>
      <Field label="Priority" hint="Batch runs after interactive work and yields its slot to it">
        <select value={priority} onChange={(e) => setPriority(e.currentTarget.value as KeyPriority)}>
          <option value="interactive">Interactive</option>
          <option value="batch">Batch</option>
        </select>
      </Field>
      {invalid && (
        <p class="note error span-all" role="alert">
          {invalid}
        </p>
      )}
      <FormFooter label="Create key" action={action} />
    </form>
  );
}

function priorityOf(l: KeyLimits): KeyPriority {
  return l.priority === 'batch' ? 'batch' : 'interactive';
}

function otherPriority(p: KeyPriority): KeyPriority {
  return p === 'batch' ? 'interactive' : 'batch';
}

function describeLimits(l: KeyLimits): string {
  const parts = [
    l.requestsPerMinute !== null && `${l.requestsPerMinute} req/min`,
    l.tokensPerMinute !== null && `${l.tokensPerMinute} tok/min`,
    l.maxConcurrent !== null && `${l.maxConcurrent} at once`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'none';
}
