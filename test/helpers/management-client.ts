import type { HearthProcess } from './hearth-process.ts';

/**
 * The management API as an e2e test calls it, and the one poll the e2e tests wait with.
 */

export interface ApiAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  /** The parsed JSON body; null for an empty one. */
  body: T;
}

export interface ApiOptions {
  /** The Bearer key: the process's own by default; null sends no authorization at all. */
  key?: string | null;
  /** The content type of a body (sent only with one); a Buffer or a string body goes as it is. */
  contentType?: string;
  /** Bounds the whole call. */
  timeoutMs?: number;
}

/** One call of `method url` on `h`, with `body` as JSON unless it is a Buffer or a string. */
type ApiCall = [h: HearthProcess, method: string, url: string, body?: unknown, opts?: ApiOptions];

/** Makes the call (see ApiCall) and answers what came back, whatever its status. */
export async function callApi<T = Record<string, unknown>>(
  ...[h, method, url, body, opts = {}]: ApiCall
): Promise<ApiAnswer<T>> {
  const key = opts.key === undefined ? h.key : opts.key;
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
  const r = await fetch(`${h.baseUrl}${url}`, {
    method,
    headers,
    body:
      body === undefined ? undefined : Buffer.isBuffer(body) || typeof body === 'string' ? body : JSON.stringify(body),
    signal: opts.timeoutMs === undefined ? undefined : AbortSignal.timeout(opts.timeoutMs),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: (text ? JSON.parse(text) : null) as T };
}

/** `callApi` for a set-up step that must succeed: throws on a status of 300 or more, answers the body. */
export async function mustCall<T = Record<string, unknown>>(...call: ApiCall): Promise<T> {
  const r = await callApi<T>(...call);
  const [, method, url] = call;
  if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export interface PollOptions {
  /** How long to wait in all (default 15 s). */
  timeoutMs?: number;
  /** The pause between two reads (default 50 ms). */
  everyMs?: number;
  /** The server's log, whose last lines the time-out error quotes. */
  logs?: () => string;
}

/** Reads `read` until `done` accepts the value, and answers it; gives up after `timeoutMs`, naming `what`. */
export async function waitFor<T>(
  read: () => T | Promise<T>,
  done: (v: T) => boolean,
  what: string,
  opts: PollOptions = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 50));
  }
  const logs = opts.logs === undefined ? '' : `\n${opts.logs().split('\n').slice(-30).join('\n')}`;
  throw new Error(`timed out waiting for ${what}${logs}`);
}

/** Polls `check` until it answers true (see `waitFor`). */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  opts: PollOptions = {},
): Promise<void> {
  await waitFor(check, (ok) => ok, what, opts);
}

/**
 * Creates a workspace named `name`, asks for its Yam and waits until the Yam is ready (polling as `opts` says,
 * each call made with `call`); answers the workspace id. A failed step throws.
 */
export async function readyWorkspace(
  h: HearthProcess,
  name: string,
  opts: PollOptions = {},
  call: ApiOptions = {},
): Promise<string> {
  const ws = (await mustCall<{ workspaceId: string }>(h, 'POST', '/api/v1/workspaces', { name }, call)).workspaceId;
  const yam = `/api/v1/workspaces/${ws}/yam`;
  await mustCall(h, 'PUT', yam, undefined, call);
  await until(
    async () => (await mustCall<{ state: string }>(h, 'GET', yam, undefined, call)).state === 'ready',
    'the Yam',
    opts,
  );
  return ws;
}

/** Creates an inference project in `ws` (without waiting for it); answers its id and token. */
export function createProject(
  h: HearthProcess,
  ws: string,
  project: Record<string, unknown>,
): Promise<{ projectId: string; token: string }> {
  return mustCall(h, 'POST', `/api/v1/workspaces/${ws}/inference`, project);
}

/** Waits until the inference project `projectId` of `ws` is ready. */
export async function projectReady(
  h: HearthProcess,
  ws: string,
  projectId: string,
  opts: PollOptions = {},
): Promise<void> {
  await until(
    async () =>
      (await mustCall<{ state: string }>(h, 'GET', `/api/v1/workspaces/${ws}/inference/${projectId}`)).state ===
      'ready',
    'a project',
    opts,
  );
}

/**
 * `callApi` and `until` bound to one process (`hearth` is read at each call, so it can be set in beforeAll):
 * every call bounded by `timeoutMs`, and a poll every 150 ms for at most 45 s that quotes the server's last
 * log lines when it gives up; `deployLive` deploys an app's archive with them, and `readyWorkspace` makes a
 * workspace whose Yam is ready.
 */
export function managementClient(hearth: () => HearthProcess, timeoutMs: number) {
  const api = <T>(method: string, url: string, body?: unknown, contentType = 'application/json') =>
    callApi<T>(hearth(), method, url, body, { contentType, timeoutMs });
  const pollOptions: PollOptions = { timeoutMs: 45_000, everyMs: 150, logs: () => hearth().logs() };
  const poll = (check: () => Promise<boolean>, what: string) => until(check, what, pollOptions);
  /** Uploads `archive` (.tar.gz) as a deployment of the app and waits until it is live; a failed build throws its log. */
  const deployLive = async (ws: string, appId: string, archive: Buffer, what: string): Promise<string> => {
    const deployments = `/api/v1/workspaces/${ws}/apps/${appId}/deployments`;
    const dep = await api<{ deploymentId: string }>('POST', deployments, archive, 'application/gzip');
    if (dep.status !== 202) throw new Error(`deploying ${what}: ${dep.status} ${JSON.stringify(dep.body)}`);
    await poll(async () => {
      const d = await api<{ state: string; buildLog: string[] }>('GET', `${deployments}/${dep.body.deploymentId}`);
      if (d.body.state === 'failed') throw new Error(d.body.buildLog.join('\n'));
      return d.body.state === 'live';
    }, `${what} to be live`);
    return dep.body.deploymentId;
  };
  const workspace = (name: string) => readyWorkspace(hearth(), name, pollOptions, { timeoutMs });
  return { api, until: poll, deployLive, readyWorkspace: workspace };
}
