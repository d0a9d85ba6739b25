import { api } from '../api.ts';
import { ConfirmButton, Field, FormFooter, StateBadge } from '../components/ui.tsx';
import { formatTime } from '../format.ts';
import { useAction, useChangeAction, useFields, useInterval, useLoad } from '../hooks.ts';
import { ResourceTable } from '../components/resource-table.tsx';
import type { ListOf, ModelView, SessionUser } from '../types.ts';

/** How often the page reads the models again (states, pull progress, requests, tokens per second). */
const REFRESH_MS = 2_000;

const path = (id: string) => `/api/v1/models/${encodeURIComponent(id)}`;

/** The owner's load and unload buttons: the states each shows in, and the POST /api/v1/models/{id}/{verb} it sends. */
const LOAD_ACTIONS: ReadonlyArray<{ label: string; verb: string; from: ReadonlyArray<ModelView['state']> }> = [
  { label: 'Load', verb: 'load', from: ['unloaded', 'failed'] },
  { label: 'Unload', verb: 'unload', from: ['ready'] },
];

/** `1.5 GiB`, `640 MiB`, `12 KiB`; `—` for 0. */
export function formatBytes(bytes: number): string {
  if (!(bytes > 0)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 || u === 0 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

/**
 * Models: every model the server serves (docs/models.md) with its state, estimated memory, requests and tokens per
 * second, read again every 2 s. An owner loads, unloads and removes models and pulls new ones (a hub URI or a
 * GGUF in the models dir); a member sees the list only (the API refuses them too).
 */
export function ModelsPage({ user }: { user: SessionUser }) {
  const owner = user.role === 'owner';
  const models = useLoad(() => api<ListOf<ModelView>>('GET', '/api/v1/models'));
  useInterval(() => void models.reload(), REFRESH_MS);
  const act = useChangeAction(() => models.reload());
  return (
    <section aria-labelledby="models-title">
      <h1 id="models-title">Models</h1>
      {owner ? (
        <PullForm onPulled={() => void models.reload()} />
      ) : (
        <p class="muted">An owner of this account loads, unloads and pulls models; you can see them here.</p>
      )}
      <ResourceTable
        label="Models"
        list={models}
        actionError={act.error}
        columns={[
          { header: 'Model', cell: (m) => <span title={m.source}>{m.id}</span> },
          {
            header: 'State',
            cell: (m) => (
              <>
                <StateBadge state={m.state} />
                {m.state === 'pulling' && m.pull && <span class="muted"> {m.pull.percent}%</span>}
                {m.state === 'failed' && m.error && <div class="muted small">{m.error}</div>}
              </>
            ),
          },
          { header: 'Memory', cell: (m) => formatBytes(m.memory_bytes), class: 'nowrap' },
          {
            header: 'Requests',
            cell: (m) => `${m.usage.requests} (${m.requests.running} running, ${m.requests.waiting} waiting)`,
            class: 'nowrap',
          },
          { header: 'Tokens/s', cell: (m) => m.usage.tokens_per_second.toFixed(1), class: 'nowrap' },
          { header: 'Last used', cell: (m) => formatTime(m.last_used_at), class: 'nowrap' },
        ]}
        actions={
          owner
            ? (m) => (
                <>
                  {LOAD_ACTIONS.filter((l) => l.from.includes(m.state)).map((l) => (
                    <button
                      key={l.label}
                      type="button"
                      class="secondary"
                      aria-label={`${l.label} ${m.id}`}
                      disabled={act.busy}
                      onClick={() => void act.change(() => api('POST', `${path(m.id)}/${l.verb}`))}
                    >
                      {l.label}
                    </button>
                  ))}
                  <ConfirmButton
                    label={`Remove ${m.id}`}
                    confirmLabel={`Confirm removing ${m.id}`}
                    onConfirm={() => act.change(() => api('DELETE', path(m.id)))}
                  />
                </>
              )
            : undefined
        }
      />
    </section>
  );
}

function PullForm({ onPulled }: { onPulled: () => void }) {
  const form = useFields({ source: '', id: '' });
  const { source, id } = form.values;
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await api('POST', '/api/v1/models', { body: { source: source.trim(), ...(id.trim() ? { id: id.trim() } : {}) } });
      form.reset();
      onPulled();
    });
  };
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="Pull a model">
      <Field label="Source" hint="hf:<user>/<repo>/<file>.gguf, or a .gguf file in the models dir">
        <input required autoComplete="off" placeholder="hf:user/repo/model.gguf" {...form.bind('source')} />
      </Field>
      <Field label="Model id" hint="Optional: <namespace>/<name>; derived from the source by default.">
        <input autoComplete="off" {...form.bind('id')} />
      </Field>
      <FormFooter label="Pull model" action={action} />
    </form>
  );
}
