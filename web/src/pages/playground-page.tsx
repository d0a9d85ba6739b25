import { useEffect, useRef, useState } from 'preact/hooks';
import { api, failureOf, type ApiErrorBody } from '../api.ts';
import { ErrorNote, Field } from '../components/ui.tsx';
import { useAction, useFields } from '../hooks.ts';
import { API_PATHS, type PlaygroundApi, readPiece, requestBody, type Usage } from '../playground-protocol.ts';
import { readEvents } from '../sse.ts';
import type { CreatedKey, HealthView, ListOf, ProjectView, WorkspaceView } from '../types.ts';

/**
 * Playground: a streamed chat completion or Anthropic Messages call against the shared model (with an API
 * key: the inference routes take no session cookie), or a chat completion of an inference project (its
 * endpoint + token). Shows the text (and the model's thinking) as it streams, the first-token time, tokens
 * per second, usage, and any error exactly as the API sent it.
 * The key/token lives in this page's memory only (gone on reload).
 */
interface RunFigures {
  firstTokenMs: number | null;
  tokensPerSecond: number | null;
  usage: Usage | null;
  finishReason: string | null;
  chunks: number;
}

type Target = 'shared' | 'project';
/** The choices of the two radio rows: what the request goes to, and which API it speaks to the shared model. */
const TARGETS: Array<[Target, string]> = [
  ['shared', 'Shared model'],
  ['project', 'Inference project'],
];
const PROTOCOLS: Array<[PlaygroundApi, string]> = [
  ['chat', 'Chat completions'],
  ['messages', 'Anthropic Messages'],
];
let rememberedKey = ''; // module memory: survives page switches, not a reload

export function PlaygroundPage() {
  const [target, setTarget] = useState<Target>('shared');
  const [protocol, setProtocol] = useState<PlaygroundApi>('chat');
  const form = useFields({
    apiKey: rememberedKey,
    endpoint: '',
    token: '',
    model: '',
    system: '',
    prompt: 'Once upon a time',
    maxTokens: '64',
    temperature: '',
  });
  const { apiKey, endpoint, token, model, system, prompt, maxTokens, temperature } = form.values;
  const [output, setOutput] = useState('');
  const [thinking, setThinking] = useState('');
  const [figures, setFigures] = useState<RunFigures | null>(null);
  const [failure, setFailure] = useState<{ status: number | null; error: ApiErrorBody } | null>(null);
  const [running, setRunning] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const keyAction = useAction();

  useEffect(() => {
    void fetch('/health')
      .then((r) => r.json() as Promise<HealthView>)
      .then((h) => form.set('model', (m) => m || h.model))
      .catch(() => {});
    return () => abort.current?.abort();
  }, []);
  useEffect(() => {
    rememberedKey = apiKey;
  }, [apiKey]);

  const send = async (e: Event) => {
    e.preventDefault();
    const api: PlaygroundApi = target === 'shared' ? protocol : 'chat'; // a project endpoint is chat completions
    const url = target === 'shared' ? API_PATHS[api] : endpoint.trim();
    const bearer = target === 'shared' ? apiKey.trim() : token.trim();
    const body = requestBody(api, { model, system, prompt, maxTokens, temperature });

    const ctl = new AbortController();
    abort.current = ctl;
    setRunning(true);
    setOutput('');
    setThinking('');
    setFailure(null);
    const f: RunFigures = { firstTokenMs: null, tokensPerSecond: null, usage: null, finishReason: null, chunks: 0 };
    setFigures({ ...f });
    const started = performance.now();
    let firstAt = 0;
    let lastAt = 0;
    try {
      const res = await fetch(url, {
        method: 'POST',
        signal: ctl.signal,
        credentials: 'omit',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify(body),
      });
      if (!res.ok || !res.body) {
        const fail = await failureOf(res);
        setFailure({ status: fail.status, error: fail.error });
        return;
      }
      for await (const ev of readEvents(res.body)) {
        if (ev.kind === 'done') break;
        const piece = readPiece(api, ev.data);
        if (piece.error) {
          setFailure({ status: null, error: piece.error });
          break;
        }
        const text = piece.text ?? piece.reasoning;
        if (text) {
          const now = performance.now();
          if (firstAt === 0) {
            firstAt = now;
            f.firstTokenMs = now - started;
          }
          lastAt = now;
          f.chunks++;
          if (piece.text) setOutput((o) => o + text);
          else setThinking((o) => o + text);
        }
        if (piece.finishReason) f.finishReason = piece.finishReason;
        if (piece.usage) f.usage = piece.usage;
        const generated = f.usage?.completion_tokens ?? f.chunks;
        f.tokensPerSecond = lastAt > firstAt && generated > 1 ? ((generated - 1) * 1000) / (lastAt - firstAt) : null;
        setFigures({ ...f });
      }
    } catch (err) {
      if (!ctl.signal.aborted)
        setFailure({
          status: null,
          error: {
            message: err instanceof Error ? err.message : String(err),
            type: 'network_error',
            param: null,
            code: null,
          },
        });
    } finally {
      setRunning(false);
      abort.current = null;
    }
  };

  return (
    <section aria-labelledby="pg-title">
      <h1 id="pg-title">Playground</h1>
      <div class="playground-layout">
        <form class="card playground" onSubmit={send} aria-label="Chat request">
          <RadioRow legend="Target" name="target" value={target} onChange={setTarget} options={TARGETS} />
          {target === 'shared' && (
            <RadioRow legend="API" name="api" value={protocol} onChange={setProtocol} options={PROTOCOLS} />
          )}
          {target === 'shared' ? (
            <div class="row">
              <Field label="API key" hint="The inference endpoint takes a Bearer key, not your session.">
                <input type="password" class="mono" autoComplete="off" {...form.bind('apiKey')} placeholder="hk_…" />
              </Field>
              <button
                type="button"
                class="secondary align-end"
                disabled={keyAction.busy}
                onClick={() =>
                  keyAction.run(async () => {
                    const k = await api<CreatedKey>('POST', '/api/v1/keys', { body: { name: 'playground' } });
                    form.set('apiKey', k.key);
                  })
                }
              >
                Create a playground key
              </button>
            </div>
          ) : (
            <div class="row top">
              <ProjectPicker
                onPick={(p) => {
                  form.set('endpoint', p.endpoint);
                  form.set('model', p.model);
                }}
              />
              <Field label="Project endpoint">
                <input
                  class="mono grow"
                  {...form.bind('endpoint')}
                  placeholder="http://…/api/v1/inference/proj_…/chat/completions"
                />
              </Field>
              <Field label="Project token">
                <input type="password" class="mono" autoComplete="off" {...form.bind('token')} placeholder="hp_…" />
              </Field>
            </div>
          )}
          <ErrorNote error={keyAction.error} />
          <div class="row">
            <Field label="Model">
              <input class="mono" required {...form.bind('model')} />
            </Field>
            <Field label="Max tokens">
              <input type="number" min="1" {...form.bind('maxTokens')} />
            </Field>
            <Field label="Temperature">
              <input type="number" min="0" max="2" step="0.1" {...form.bind('temperature')} placeholder="default" />
            </Field>
          </div>
          <Field label="System prompt">
            <textarea rows={2} {...form.bind('system')} />
          </Field>
          <Field label="Message">
            <textarea rows={3} required {...form.bind('prompt')} />
          </Field>
          <div class="row">
            <button type="submit" disabled={running}>
              {running ? 'Streaming…' : 'Send'}
            </button>
            {running && (
              <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
                Stop
              </button>
            )}
          </div>
        </form>
        <div class="card">
          <h2>Reply</h2>
          {failure && <ReplyError failure={failure} />}
          {thinking && (
            <details class="thinking" open>
              <summary>Thinking</summary>
              <div class="reply muted" role="log" aria-label="Thinking">
                {thinking}
              </div>
            </details>
          )}
          <div class="reply" role="log" aria-label="Reply" aria-live="polite">
            {output || (running ? '' : <span class="muted">Nothing yet.</span>)}
          </div>
          {figures && <Figures f={figures} />}
        </div>
      </div>
    </section>
  );
}

/** A row of radio buttons for one choice (its legend read by screen readers only). */
function RadioRow<T extends string>(p: {
  legend: string;
  name: string;
  value: T;
  onChange: (v: T) => void;
  options: Array<[T, string]>;
}) {
  return (
    <fieldset class="row">
      <legend class="sr-only">{p.legend}</legend>
      {p.options.map(([v, label]) => (
        <label class="choice" key={v}>
          <input type="radio" name={p.name} checked={p.value === v} onChange={() => p.onChange(v)} /> {label}
        </label>
      ))}
    </fieldset>
  );
}

/** The account's projects, to fill the endpoint and model (the token was shown once: it is pasted). */
function ProjectPicker({ onPick }: { onPick: (p: ProjectView) => void }) {
  const [projects, setProjects] = useState<Array<{ label: string; project: ProjectView }>>([]);
  useEffect(() => {
    void (async () => {
      const ws = await api<ListOf<WorkspaceView>>('GET', '/api/v1/workspaces');
      const lists = await Promise.all(
        ws.data
          .filter((w) => w.yam?.state === 'ready')
          .map(async (w) => ({
            w,
            ps: await api<ListOf<ProjectView>>(
              'GET',
              `/api/v1/workspaces/${encodeURIComponent(w.workspaceId)}/inference`,
            ),
          })),
      );
      setProjects(
        lists.flatMap(({ w, ps }) => ps.data.map((p) => ({ label: `${w.name} / ${p.name} (${p.state})`, project: p }))),
      );
    })().catch(() => setProjects([]));
  }, []);
  return (
    <Field label="Project">
      <select
        onChange={(e) => {
          const picked = projects[Number(e.currentTarget.value)];
          if (picked) onPick(picked.project);
        }}
      >
        <option value="">{projects.length ? 'Choose a project…' : 'No projects'}</option>
        {projects.map((p, i) => (
          <option key={p.project.projectId} value={i}>
            {p.label}
          </option>
        ))}
      </select>
    </Field>
  );
}

function ReplyError({ failure }: { failure: { status: number | null; error: ApiErrorBody } }) {
  const e = failure.error;
  return (
    <div class="note error" role="alert">
      <strong>{failure.status !== null ? `${failure.status} ` : 'Stream error: '}</strong>
      {e.message}
      <div class="mono small">
        type {e.type}
        {e.code && ` · code ${e.code}`}
        {e.param && ` · param ${e.param}`}
      </div>
    </div>
  );
}

function Figures({ f }: { f: RunFigures }) {
  return (
    <dl class="facts" aria-label="Figures">
      <dt>First token</dt>
      <dd>{f.firstTokenMs === null ? '—' : `${Math.round(f.firstTokenMs)} ms`}</dd>
      <dt>Tokens per second</dt>
      <dd>{f.tokensPerSecond === null ? '—' : f.tokensPerSecond.toFixed(1)}</dd>
      <dt>Usage</dt>
      <dd>
        {f.usage
          ? `${f.usage.prompt_tokens} prompt + ${f.usage.completion_tokens} completion = ${f.usage.total_tokens} tokens`
          : '—'}
      </dd>
      <dt>Finish</dt>
      <dd>{f.finishReason ?? '—'}</dd>
    </dl>
  );
}
