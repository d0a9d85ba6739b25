import { useState } from 'preact/hooks';
import { ApiFailure, api } from '../api.ts';
import {
  ConfirmButton,
  CopyButton,
  DeleteButton,
  ErrorNote,
  Field,
  FormFooter,
  NameField,
  Note,
  SecretOnce,
  StateBadge,
} from '../components/ui.tsx';
import { formatTime } from '../format.ts';
import { useAction, useChangeAction, useFields, useInterval, useLoad } from '../hooks.ts';
import { navigate } from '../navigation.ts';
import {
  PROVIDERS,
  type ListOf,
  type ProjectView,
  type ProjectWithToken,
  type Provider,
  type WorkspaceView,
} from '../types.ts';
import { AppsPanel } from './apps-panel.tsx';
import { CardList } from '../components/card-list.tsx';

const POLL_MS = 1500;

/** One workspace: its Yam, its inference projects (token shown once, rotation), its apps. */
export function WorkspacePage({ workspaceId }: { workspaceId: string }) {
  const base = `/api/v1/workspaces/${encodeURIComponent(workspaceId)}`;
  const ws = useLoad(() => api<WorkspaceView>('GET', base), [workspaceId]);
  const yamAction = useAction();
  const remove = useAction();
  const yam = ws.data?.yam ?? null;
  useInterval(() => {
    if (yam?.state === 'creating') void ws.reload();
  }, POLL_MS);

  if (ws.error instanceof ApiFailure && ws.error.status === 404)
    return (
      <section>
        <h1>Workspace not found</h1>
        <ErrorNote error={ws.error} />
        <a href="/workspaces">All workspaces</a>
      </section>
    );
  if (!ws.data) return ws.error ? <ErrorNote error={ws.error} /> : <p role="status">Loading…</p>;
  return (
    <section aria-labelledby="ws-name">
      <p class="crumbs">
        <a href="/workspaces">Workspaces</a> /
      </p>
      <div class="row spread">
        <h1 id="ws-name">{ws.data.name}</h1>
        <ConfirmButton
          label="Delete workspace"
          confirmLabel="Confirm deleting this workspace and its projects"
          onConfirm={() =>
            remove.run(async () => {
              await api('DELETE', base);
              navigate('/workspaces', true);
            })
          }
        />
      </div>
      <ErrorNote error={remove.error} />
      <div class="card" aria-label="Yam">
        <div class="row spread">
          <div>
            <h2 class="inline">Yam</h2> <span class="muted small">the workspace's application host</span>
          </div>
          <StateBadge state={yam?.state ?? 'none'} />
        </div>
        {yam?.error && (
          <p class="note error" role="alert">
            {yam.error}
          </p>
        )}
        {(yam === null || yam.state === 'failed') && (
          <button
            type="button"
            disabled={yamAction.busy}
            onClick={() =>
              yamAction.run(async () => {
                await api('PUT', `${base}/yam`);
                await ws.reload();
              })
            }
          >
            {yam === null ? 'Create Yam' : 'Create Yam again'}
          </button>
        )}
        {yam?.state === 'ready' && <p class="muted small">Ready since {formatTime(yam.readyAt)}.</p>}
        <ErrorNote error={yamAction.error} />
      </div>
      <Projects base={base} yamReady={yam?.state === 'ready'} />
      <AppsPanel base={base} yamReady={yam?.state === 'ready'} />
    </section>
  );
}

function Projects({ base, yamReady }: { base: string; yamReady: boolean }) {
  const list = useLoad(() => api<ListOf<ProjectView>>('GET', `${base}/inference`), [base]);
  const [secret, setSecret] = useState<{ label: string; token: string; project: ProjectView } | null>(null);
  useInterval(() => {
    if (list.data?.data.some((p) => p.state === 'provisioning')) void list.reload();
  }, POLL_MS);
  return (
    <div class="card" aria-label="Inference projects">
      <h2>Inference projects</h2>
      {!yamReady && <Note tone="warn">Projects need the workspace's Yam to be ready.</Note>}
      <CreateProjectForm
        base={base}
        disabled={!yamReady}
        onCreated={(p) => {
          setSecret({ label: 'Project token', token: p.token, project: p });
          void list.reload();
        }}
      />
      {secret && (
        <div>
          <SecretOnce label={secret.label} value={secret.token} onDone={() => setSecret(null)} />
        </div>
      )}
      <ErrorNote error={list.error} />
      <CardList list={list} empty="No projects yet." keyOf={(p) => p.projectId}>
        {(p) => (
          <ProjectCard
            base={base}
            project={p}
            onRotated={(r) => setSecret({ label: 'Project token', token: r.token, project: r })}
            onChanged={() => void list.reload()}
          />
        )}
      </CardList>
    </div>
  );
}

function CreateProjectForm({
  base,
  disabled,
  onCreated,
}: {
  base: string;
  disabled: boolean;
  onCreated: (p: ProjectWithToken) => void;
}) {
  const form = useFields({ name: '', model: '', key: '', temperature: '' });
  const { name, model, key, temperature } = form.values;
  const [provider, setProvider] = useState<Provider>('openai');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    const body: Record<string, unknown> = { name: name.trim(), provider, model: model.trim(), providerApiKey: key };
    if (temperature.trim() !== '') body.temperature = Number(temperature);
    void action.run(async () => {
      const p = await api<ProjectWithToken>('POST', `${base}/inference`, { body });
      form.reset();
      onCreated(p);
    });
  };
  return (
    <form class="form-grid" onSubmit={submit} aria-label="Create an inference project">
      <NameField label="Project name" placeholder="support bot" bind={form.bind('name')} />
      <Field label="Provider">
        <select value={provider} onChange={(e) => setProvider(e.currentTarget.value as Provider)}>
          {PROVIDERS.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Model">
        <input required {...form.bind('model')} placeholder="gpt-4o-mini" />
      </Field>
      <Field label="Provider API key" hint="Stored encrypted; only its last 4 characters are shown.">
        <input type="password" required autoComplete="off" {...form.bind('key')} />
      </Field>
      <Field label="Temperature" hint="0 to 2; empty: the provider's default">
        <input type="number" min="0" max="2" step="0.1" {...form.bind('temperature')} />
      </Field>
      <FormFooter label="Create project" action={action} disabled={disabled} />
    </form>
  );
}

function ProjectCard({
  base,
  project: p,
  onRotated,
  onChanged,
}: {
  base: string;
  project: ProjectView;
  onRotated: (p: ProjectWithToken) => void;
  onChanged: () => void;
}) {
  const action = useChangeAction(onChanged);
  const path = `${base}/inference/${encodeURIComponent(p.projectId)}`;
  const curl = curlSnippet(p);
  return (
    <article class="project" aria-label={`Project ${p.name}`}>
      <div class="row spread">
        <div>
          <h3 class="inline">{p.name}</h3>{' '}
          <span class="muted small">
            {p.provider} · <span class="mono">{p.model}</span>
            {p.temperature !== null && ` · temperature ${p.temperature}`}
            {p.providerKey && ` · key …${p.providerKey.last4}`}
          </span>
        </div>
        <StateBadge state={p.state} />
      </div>
      {p.stateReason && <p class="note warn">{p.stateReason}</p>}
      <div class="row">
        <input class="mono grow" readOnly value={p.endpoint} aria-label={`Endpoint of ${p.name}`} />
        <CopyButton text={p.endpoint} label={`Copy endpoint of ${p.name}`} />
      </div>
      <details>
        <summary>curl example</summary>
        <pre class="code">{curl}</pre>
        <CopyButton text={curl} label={`Copy curl example of ${p.name}`} />
      </details>
      <div class="row">
        <span class="muted small">Token issued {formatTime(p.tokenIssuedAt)}</span>
        <span class="grow" />
        <ConfirmButton
          label={`Rotate token of ${p.name}`}
          confirmLabel="Confirm rotation (the old token stops working now)"
          onConfirm={() => action.change(async () => onRotated(await api<ProjectWithToken>('POST', `${path}/token`)))}
        />
        {STATE_ACTIONS.filter((s) => s.from.includes(p.state)).map((s) => (
          <button
            key={s.label}
            type="button"
            class="secondary"
            onClick={() => action.change(() => api('PATCH', path, { body: { state: s.to } }))}
          >
            {s.label} {p.name}
          </button>
        ))}
        <DeleteButton name={p.name} onConfirm={() => action.change(() => api('DELETE', path))} />
      </div>
      <ErrorNote error={action.error} />
    </article>
  );
}

/** A project's suspend and resume buttons: the states each shows in, and the state its PATCH asks for. */
const STATE_ACTIONS: ReadonlyArray<{
  label: string;
  from: ReadonlyArray<ProjectView['state']>;
  to: ProjectView['state'];
}> = [
  { label: 'Suspend', from: ['ready'], to: 'suspended' },
  { label: 'Resume', from: ['suspended', 'failed'], to: 'ready' },
];

function curlSnippet(p: ProjectView): string {
  const body = JSON.stringify({ model: p.model, messages: [{ role: 'user', content: 'Hello' }], stream: true });
  return `curl -sN ${p.endpoint} \\\n  -H "Authorization: Bearer $HEARTH_PROJECT_TOKEN" \\\n  -H 'content-type: application/json' \\\n  -d '${body}'`;
}
