import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ConfirmButton, ErrorNote, Field, SecretOnce, StateBadge, formatTime, optionalPositiveInt, useAction, useLoad } from '../components/ui.tsx';
import type { ApiKeyView, CreatedKey, KeyLimits, ListOf } from '../types.ts';

/** Settings -> API keys: create (optional limits; the key shown once), list with last use, revoke. */
export function KeysPage() {
  const keys = useLoad(() => api<ListOf<ApiKeyView>>('GET', '/api/v1/keys'));
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const revoke = useAction();
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <p class="muted">Keys call the shared endpoint (<code>/api/inference/v1</code>) and the management API. Hearth stores only a hash: a key is shown once.</p>
      <CreateKeyForm
        onCreated={(k) => {
          setCreated(k);
          void keys.reload();
        }}
      />
      {created && <SecretOnce label="New API key" value={created.key} onDone={() => setCreated(null)} />}
      <ErrorNote error={keys.error ?? revoke.error} />
      <table aria-label="API keys">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key id</th>
            <th scope="col">Limits</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.data?.data.length === 0 && (
            <tr>
              <td colSpan={7} class="muted">
                No keys yet.
              </td>
            </tr>
          )}
          {keys.data?.data.map((k) => (
            <tr key={k.id}>
              <td>{k.name}</td>
              <td class="mono small">{k.id}</td>
              <td class="small">{describeLimits(k.limits)}</td>
              <td class="nowrap">{formatTime(k.createdAt)}</td>
              <td class="nowrap">{k.lastUsedAt ? formatTime(k.lastUsedAt) : 'never'}</td>
              <td>
                <StateBadge state={k.revokedAt ? 'revoked' : 'active'} />
              </td>
              <td class="actions">
                {!k.revokedAt && (
                  <ConfirmButton
                    label={`Revoke ${k.name}`}
                    confirmLabel={`Confirm revoking ${k.name}`}
                    disabled={revoke.busy}
                    onConfirm={() =>
                      revoke.run(async () => {
                        await api('DELETE', `/api/v1/keys/${encodeURIComponent(k.id)}`);
                        await keys.reload();
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

function CreateKeyForm({ onCreated }: { onCreated: (k: CreatedKey) => void }) {
  const [name, setName] = useState('');
  const [rpm, setRpm] = useState('');
  const [tpm, setTpm] = useState('');
  const [conc, setConc] = useState('');
  const [invalid, setInvalid] = useState<string | null>(null);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    const limits: KeyLimits = { requestsPerMinute: optionalPositiveInt(rpm), tokensPerMinute: optionalPositiveInt(tpm), maxConcurrent: optionalPositiveInt(conc) };
    const bad = Object.entries(limits).find(([, v]) => Number.isNaN(v));
    if (bad) return setInvalid('A limit is a whole number above 0, or empty for no limit.');
    setInvalid(null);
    const anyLimit = Object.values(limits).some((v) => v !== null);
    void action.run(async () => {
      const k = await api<CreatedKey>('POST', '/api/v1/keys', { body: anyLimit ? { name: name.trim(), limits } : { name: name.trim() } });
      setName('');
      setRpm('');
      setTpm('');
      setConc('');
      onCreated(k);
    });
  };
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="Create an API key">
      <Field label="Key name">
        <input required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="ci" />
      </Field>
      <Field label="Requests per minute" hint="Empty: no limit">
        <input inputMode="numeric" value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} />
      </Field>
      <Field label="Tokens per minute" hint="Empty: no limit">
        <input inputMode="numeric" value={tpm} onInput={(e) => setTpm(e.currentTarget.value)} />
      </Field>
      <Field label="Concurrent requests" hint="Empty: no limit">
        <input inputMode="numeric" value={conc} onInput={(e) => setConc(e.currentTarget.value)} />
      </Field>
      <div class="form-actions">
        <button type="submit" disabled={action.busy}>
          Create key
        </button>
      </div>
      {invalid && (
        <p class="note error span-all" role="alert">
          {invalid}
        </p>
      )}
      <div class="span-all">
        <ErrorNote error={action.error} />
      </div>
    </form>
  );
}

function describeLimits(l: KeyLimits | null | undefined): string {
  if (!l) return 'none';
  const parts = [l.requestsPerMinute !== null && `${l.requestsPerMinute} req/min`, l.tokensPerMinute !== null && `${l.tokensPerMinute} tok/min`, l.maxConcurrent !== null && `${l.maxConcurrent} at once`].filter(Boolean);
  return parts.length ? parts.join(', ') : 'none';
}
