import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure, api, type CallOptions, describeError, failureOf } from '../api.ts';
import { DeleteButton, ErrorNote, Field, FormFooter, NameField, Note, StateBadge } from '../components/ui.tsx';
import { formatTime } from '../format.ts';
import { useAction, useChangeAction, useFields, useInterval, useLoad } from '../hooks.ts';
import { ResourceTable } from '../components/resource-table.tsx';
import { CardList } from '../components/card-list.tsx';
import { readEvents } from '../sse.ts';
import type { AppLogLine, AppView, DeploymentView, ListOf } from '../types.ts';

const POLL_MS = 2000;

/**
 * The app API, with the API's answer shown in the panel: a 401 here does not sign the user out (a server
 * whose app routes take only Bearer keys would otherwise end every visit); a lost session is caught by the
 * page's other calls.
 */
const appApi = <T,>(method: string, path: string, o: CallOptions = {}) =>
  api<T>(method, path, { ...o, allowUnauthorized: true });
const BUSY_STATES = new Set(['queued', 'fetching', 'building', 'starting']);

/**
 * A workspace's apps on its Yam (contract "Applications on the Yam"): list, create with env, deploy by
 * upload or repository URL, deployments with rollback, logs. A server without the app API (404 on the
 * list) shows "not available" and nothing else.
 */
export function AppsPanel({ base, yamReady }: { base: string; yamReady: boolean }) {
  const apps = useLoad(() => appApi<ListOf<AppView>>('GET', `${base}/apps`), [base, yamReady]);
  const [open, setOpen] = useState<string | null>(null);
  const absent =
    apps.error instanceof ApiFailure && apps.error.status === 404 && apps.error.error.code !== 'workspace_not_found';
  const noYam = apps.error instanceof ApiFailure && apps.error.error.code === 'no_yam_configured';
  return (
    <div class="card" aria-label="Apps">
      <h2>Apps</h2>
      {absent ? (
        <Note tone="warn">Apps are not available on this server.</Note>
      ) : noYam || !yamReady ? (
        <Note tone="warn">Apps run on the workspace's Yam: create it first.</Note>
      ) : (
        <>
          <ErrorNote error={apps.error} />
          <CreateAppForm
            base={base}
            onCreated={(a) => {
              setOpen(a.appId);
              void apps.reload();
            }}
          />
          <CardList list={apps} empty="No apps yet." keyOf={(a) => a.appId}>
            {(a) => (
              <AppCard
                base={base}
                app={a}
                open={open === a.appId}
                onToggle={() => setOpen(open === a.appId ? null : a.appId)}
                onChanged={() => void apps.reload()}
              />
            )}
          </CardList>
        </>
      )}
    </div>
  );
}

/** `NAME=value` lines -> an env object; blank lines and `#` comments ignored. */
function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`"${line}" is not NAME=value`);
    env[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  return env;
}

function CreateAppForm({ base, onCreated }: { base: string; onCreated: (a: AppView) => void }) {
  const form = useFields({ name: '', env: '', apiKeyEnv: 'HEARTH_API_KEY' });
  const { name, env, apiKeyEnv } = form.values;
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const a = await appApi<AppView>('POST', `${base}/apps`, {
        body: { name: name.trim(), env: parseEnv(env), apiKeyEnv: apiKeyEnv.trim() === '' ? null : apiKeyEnv.trim() },
      });
      form.reset(['name', 'env']);
      onCreated(a);
    });
  };
  return (
    <form class="form-grid" onSubmit={submit} aria-label="Create an app">
      <NameField label="App name" bind={form.bind('name')} />
      <Field label="API key variable" hint="Receives a Hearth API key; empty: none">
        <input {...form.bind('apiKeyEnv')} />
      </Field>
      <Field label="Environment" hint="NAME=value per line; values are never shown again">
        <textarea rows={2} class="mono" {...form.bind('env')} />
      </Field>
      <FormFooter label="Create app" action={action} />
    </form>
  );
}

function AppCard({
  base,
  app: a,
  open,
  onToggle,
  onChanged,
}: {
  base: string;
  app: AppView;
  open: boolean;
  onToggle: () => void;
  onChanged: () => void;
}) {
  const path = `${base}/apps/${encodeURIComponent(a.appId)}`;
  const action = useChangeAction(onChanged);
  // Bumped by every deployment made here, so the deployments list shows it at once (and polls while it runs).
  const [deployments, setDeployments] = useState(0);
  return (
    <article class="project" aria-label={`App ${a.name}`}>
      <div class="row spread">
        <div>
          <h3 class="inline">{a.name}</h3>{' '}
          <a class="small" href={a.url} target="_blank" rel="noreferrer">
            {a.url}
          </a>
        </div>
        <span class="row tight">
          <StateBadge state={a.state} />
          <button type="button" class="secondary" aria-expanded={open} onClick={onToggle}>
            {open ? `Hide ${a.name}` : `Manage ${a.name}`}
          </button>
        </span>
      </div>
      <p class="muted small">
        Env: {a.envNames.length ? a.envNames.join(', ') : 'none'}
        {a.apiKeyEnv && ` · API key in ${a.apiKeyEnv}`} · health {a.healthPath}
      </p>
      {open && (
        <>
          <DeployForms
            path={path}
            onDeployed={() => {
              setDeployments((n) => n + 1);
              onChanged();
            }}
          />
          <EnvEditor path={path} names={a.envNames} onChanged={onChanged} />
          <Deployments path={path} live={a.liveDeploymentId} made={deployments} onChanged={onChanged} />
          <Logs path={path} name={a.name} />
          <div class="row">
            <button
              type="button"
              class="secondary"
              onClick={() => action.change(() => appApi('POST', `${path}/restart`))}
            >
              Restart {a.name}
            </button>
            <DeleteButton name={a.name} onConfirm={() => action.change(() => appApi('DELETE', path))} />
          </div>
          <ErrorNote error={action.error} />
        </>
      )}
    </article>
  );
}

function DeployForms({ path, onDeployed }: { path: string; onDeployed: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [repo, setRepo] = useState('');
  const [ref, setRef] = useState('');
  const action = useAction();
  const [queued, setQueued] = useState<string | null>(null);
  const done = (d: DeploymentView) => {
    setQueued(`Deployment ${d.deploymentId} ${d.state}.`);
    onDeployed();
  };
  return (
    <div class="deploy">
      <form
        class="row"
        aria-label="Deploy an archive"
        onSubmit={(e) => {
          e.preventDefault();
          if (!file) return;
          void action.run(async () =>
            done(
              await appApi<DeploymentView>('POST', `${path}/deployments`, {
                raw: { data: file, contentType: 'application/gzip' },
              }),
            ),
          );
        }}
      >
        <Field label="Archive (.tar.gz)">
          <input
            type="file"
            accept=".tar.gz,.tgz,application/gzip"
            onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
          />
        </Field>
        <button type="submit" class="align-end" disabled={!file || action.busy}>
          Deploy archive
        </button>
      </form>
      <form
        class="row"
        aria-label="Deploy from a repository"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () =>
            done(
              await appApi<DeploymentView>('POST', `${path}/deployments`, {
                body: ref.trim() ? { repository: repo.trim(), ref: ref.trim() } : { repository: repo.trim() },
              }),
            ),
          );
        }}
      >
        <Field label="Repository URL">
          <input
            required
            value={repo}
            onInput={(e) => setRepo(e.currentTarget.value)}
            placeholder="https://git.example.com/app.git"
          />
        </Field>
        <Field label="Ref">
          <input value={ref} onInput={(e) => setRef(e.currentTarget.value)} placeholder="main" />
        </Field>
        <button type="submit" class="align-end" disabled={action.busy}>
          Deploy repository
        </button>
      </form>
      {queued && <Note tone="ok">{queued}</Note>}
      <ErrorNote error={action.error} />
    </div>
  );
}

function EnvEditor({ path, names, onChanged }: { path: string; names: string[]; onChanged: () => void }) {
  const [text, setText] = useState('');
  const action = useChangeAction(onChanged);
  return (
    <form
      class="row"
      aria-label="Change environment"
      onSubmit={(e) => {
        e.preventDefault();
        void action.change(async () => {
          await appApi('PATCH', path, { body: { env: parseEnv(text) } });
          setText('');
        });
      }}
    >
      <Field
        label="Set variables"
        hint={`NAME=value per line; a change starts a new release. Set: ${names.join(', ') || 'none'}`}
      >
        <textarea rows={2} class="mono" value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </Field>
      <button type="submit" class="align-end" disabled={action.busy || text.trim() === ''}>
        Save variables
      </button>
      {names.map((n) => (
        <button
          key={n}
          type="button"
          class="secondary align-end"
          onClick={() => action.change(() => appApi('PATCH', path, { body: { env: { [n]: null } } }))}
        >
          Unset {n}
        </button>
      ))}
      <ErrorNote error={action.error} />
    </form>
  );
}

function Deployments({
  path,
  live,
  made,
  onChanged,
}: {
  path: string;
  live: string | null;
  made: number;
  onChanged: () => void;
}) {
  const list = useLoad(() => appApi<ListOf<DeploymentView>>('GET', `${path}/deployments`), [path, live, made]);
  const action = useChangeAction(onChanged);
  useInterval(() => {
    if (list.data?.data.some((d) => BUSY_STATES.has(d.state))) void list.reload().then(onChanged);
  }, POLL_MS);
  return (
    <div>
      <h4>Deployments</h4>
      <ResourceTable
        label="Deployments"
        list={list}
        actionError={action.error}
        rowKey={(d) => d.deploymentId}
        columns={[
          { header: 'Deployment', cell: (d) => d.deploymentId, class: 'mono small' },
          {
            header: 'State',
            cell: (d) => (
              <>
                <StateBadge state={d.state} /> {d.reason && <span class="small">{d.reason}</span>}
              </>
            ),
          },
          { header: 'Created', cell: (d) => formatTime(d.createdAt) },
          {
            header: 'Build log',
            cell: (d) =>
              d.buildLog.length > 0 && (
                <details>
                  <summary>build log</summary>
                  <pre class="code">{d.buildLog.join('\n')}</pre>
                </details>
              ),
          },
        ]}
        actions={(d) =>
          d.state === 'retired' &&
          d.deploymentId !== live && (
            <button
              type="button"
              class="secondary"
              onClick={() =>
                action.change(async () => {
                  await appApi('POST', `${path}/rollback`, { body: { deploymentId: d.deploymentId } });
                  await list.reload();
                })
              }
            >
              Roll back to {d.deploymentId}
            </button>
          )
        }
      />
    </div>
  );
}

/** The last lines, then (on Follow) new lines from the `?follow=1` SSE stream until stopped or unmounted. */
function Logs({ path, name }: { path: string; name: string }) {
  const [lines, setLines] = useState<string[]>([]);
  const [following, setFollowing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);
  const show = (l: AppLogLine | string) => (typeof l === 'string' ? l : `${l.time} ${l.stream} ${l.line}`);
  const load = async () => {
    try {
      const r = await appApi<ListOf<AppLogLine>>('GET', `${path}/logs`);
      setLines(r.data.map(show));
      setError(null);
    } catch (err) {
      setError(describeError(err));
    }
  };
  useEffect(() => {
    void load();
    return () => abort.current?.abort();
  }, [path]);
  const follow = async () => {
    const ctl = new AbortController();
    abort.current = ctl;
    setFollowing(true);
    try {
      const res = await fetch(`${path}/logs?follow=1`, {
        signal: ctl.signal,
        headers: { accept: 'text/event-stream' },
      });
      if (!res.ok || !res.body) throw await failureOf(res);
      for await (const ev of readEvents(res.body)) {
        if (ev.kind !== 'data') continue;
        let line: AppLogLine | string = ev.data;
        try {
          line = JSON.parse(ev.data) as AppLogLine;
        } catch {
          /* a plain text line */
        }
        setLines((ls) => [...ls.slice(-499), show(line)]);
      }
    } catch (err) {
      if (!ctl.signal.aborted) setError(describeError(err));
    } finally {
      setFollowing(false);
    }
  };
  return (
    <div>
      <div class="row">
        <h4 class="grow">Logs</h4>
        <button type="button" class="secondary" onClick={() => void load()}>
          Refresh logs of {name}
        </button>
        {following ? (
          <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
            Stop following
          </button>
        ) : (
          <button type="button" class="secondary" onClick={() => void follow()}>
            Follow logs of {name}
          </button>
        )}
      </div>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      <pre class="code logs" role="log" aria-label={`Logs of ${name}`}>
        {lines.join('\n') || 'No output yet.'}
      </pre>
    </div>
  );
}
