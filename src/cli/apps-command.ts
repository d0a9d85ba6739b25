import fs from 'node:fs';
import path from 'node:path';
import { packDirectory } from '../apps/archive-packer.ts';
import { settingsHelp } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';
import { ConfigError, JSON_SETTING, commandArgs } from './cli-args.ts';

/**
 * `hearth apps`: apps on a workspace's Yam. Unlike the record commands, it talks to the RUNNING server's
 * /api/v1 with an API key (--url, --api-key), because deployments are built, started and supervised by
 * the server process; the data dir alone cannot run an app. A directory is packed into a .tar.gz here
 * (excludes from .hearthignore, else .gitignore; node_modules and .git never), an archive file is sent
 * as it is, a repository is cloned by the server. `deploy` waits until the deployment is live or failed
 * (printing its build log) unless --no-wait.
 */
const SPECS: SettingSpec[] = [
  {
    key: 'url',
    flag: '--url',
    env: 'HEARTH_URL',
    type: 'string',
    default: 'http://127.0.0.1:8080',
    help: 'Base URL of the running Hearth server',
  },
  {
    key: 'apiKey',
    flag: '--api-key',
    env: 'HEARTH_API_KEY',
    type: 'string',
    default: undefined,
    secret: true,
    help: 'An API key of the account (hearth keys create)',
  },
  {
    key: 'workspace',
    flag: '--workspace',
    env: 'HEARTH_WORKSPACE',
    type: 'string',
    default: undefined,
    help: 'The workspace whose Yam hosts the apps',
  },
  {
    key: 'name',
    flag: '--name',
    env: 'HEARTH_APP_NAME',
    type: 'string',
    default: undefined,
    help: 'Name of the new app (create)',
  },
  {
    key: 'apiKeyEnv',
    flag: '--api-key-env',
    env: 'HEARTH_APP_API_KEY_ENV',
    type: 'string',
    default: undefined,
    help: 'create: the variable that receives a Hearth API key made for the app',
  },
  {
    key: 'healthPath',
    flag: '--health-path',
    env: 'HEARTH_APP_HEALTH_PATH',
    type: 'string',
    default: undefined,
    help: 'create: the health check path (default /health)',
  },
  {
    key: 'repository',
    flag: '--repository',
    env: 'HEARTH_APP_REPOSITORY',
    type: 'string',
    default: undefined,
    help: 'deploy: a git URL the server clones, instead of a directory or archive',
  },
  {
    key: 'ref',
    flag: '--ref',
    env: 'HEARTH_APP_REF',
    type: 'string',
    default: undefined,
    help: 'deploy: the branch, tag or commit of --repository',
  },
  {
    key: 'noWait',
    flag: '--no-wait',
    env: 'HEARTH_APP_NO_WAIT',
    type: 'bool',
    default: false,
    help: 'deploy, rollback: return once the deployment is queued',
  },
  {
    key: 'follow',
    flag: '--follow',
    env: 'HEARTH_APP_FOLLOW',
    type: 'bool',
    default: false,
    help: 'logs: keep printing new lines',
  },
  {
    key: 'lines',
    flag: '--lines',
    env: 'HEARTH_APP_LOG_LINES',
    type: 'int',
    min: 0,
    max: 1000,
    default: 100,
    help: 'logs: how many of the last lines',
  },
  JSON_SETTING,
];

export const APPS_HELP = `Usage: hearth apps <action> [options]

  hearth apps create --name NAME [KEY=VALUE ...] [--api-key-env VAR]   Create an app (env as KEY=VALUE)
  hearth apps list                                List the workspace's apps
  hearth apps get APP                             Show an app
  hearth apps deploy APP <dir|archive.tar.gz>     Pack and upload, build, start; wait until live
  hearth apps deploy APP --repository URL [--ref R]
  hearth apps deployments APP                     List an app's deployments (releases)
  hearth apps logs APP [--follow] [--lines N]     The app's output
  hearth apps env set APP KEY=VALUE ...           Set variables (a new release of the live code)
  hearth apps env unset APP KEY ...               Unset variables (a new release of the live code)
  hearth apps rollback APP DEPLOYMENT             Make an earlier successful build live again
  hearth apps restart APP                         Restart the live process (zero downtime)
  hearth apps delete APP                          Stop the app, remove its files, revoke its key

Talks to the running server (--url) with an API key (--api-key or HEARTH_API_KEY).

Options:
${settingsHelp(SPECS)}`;

interface ApiErrorBody {
  error?: { message?: string; code?: string | null };
}

class HearthApi {
  constructor(
    private readonly base: string,
    private readonly key: string,
  ) {}

  async call<T>(method: string, url: string, body?: unknown, type = 'application/json'): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    if (body !== undefined) headers['content-type'] = type;
    let r: Response;
    try {
      r = await fetch(`${this.base}${url}`, {
        method,
        headers,
        body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error(
        `cannot reach Hearth at ${this.base}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`,
      );
    }
    const text = await r.text();
    let value: unknown;
    try {
      value = text === '' ? null : JSON.parse(text);
    } catch {
      throw new Error(`Hearth answered ${r.status} with something that is not JSON`);
    }
    if (!r.ok) {
      const e = (value as ApiErrorBody | null)?.error;
      throw new Error(`${e?.message ?? `HTTP ${r.status}`}${e?.code ? ` (${e.code})` : ''}`);
    }
    return value as T;
  }

  stream(url: string): Promise<Response> {
    return fetch(`${this.base}${url}`, { headers: { authorization: `Bearer ${this.key}` } });
  }
}

interface AppView {
  appId: string;
  name: string;
  state: string;
  url: string;
  envNames: string[];
  apiKeyEnv: string | null;
  liveDeploymentId: string | null;
}
interface DeploymentView {
  deploymentId: string;
  state: string;
  reason: string | null;
  buildLog: string[];
  createdAt: string;
  source: { kind: string };
}
interface LogLine {
  time: string;
  stream: string;
  line: string;
}

const appText = (a: AppView) =>
  `${a.appId}\t${a.name}\t${a.state}\t${a.url}\tenv: ${a.envNames.join(', ') || '-'}${a.apiKeyEnv ? `\tkey in ${a.apiKeyEnv}` : ''}`;
const deploymentText = (d: DeploymentView) =>
  `${d.deploymentId}\t${d.state}\t${d.source.kind}\t${d.createdAt}${d.reason ? `\t${d.reason}` : ''}`;
const logText = (l: LogLine) => `${l.time} [${l.stream}] ${l.line}`;

function parseAssignments(items: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new ConfigError(`expected KEY=VALUE, got '${item}'`);
    env[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return env;
}

export async function appsCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const args = commandArgs(argv, SPECS, APPS_HELP, out);
  if (typeof args === 'number') return args;
  const { action, positional, options, json, print } = args;
  if (options.apiKey === undefined)
    throw new ConfigError('an API key is needed: --api-key or HEARTH_API_KEY (npx hearth keys create --name cli)');
  if (options.workspace === undefined)
    throw new ConfigError('a workspace is needed: --workspace or HEARTH_WORKSPACE (hearth workspaces list)');
  const api = new HearthApi(String(options.url).replace(/\/+$/, ''), String(options.apiKey));
  const apps = `/api/v1/workspaces/${encodeURIComponent(String(options.workspace))}/apps`;
  const appId = (i = 0) => {
    const id = positional[i];
    if (!id) throw new ConfigError(`apps ${action} needs an app id (see npx hearth apps list)`);
    return encodeURIComponent(id);
  };

  const waitFor = async (app: string, dep: DeploymentView): Promise<number> => {
    if (options.noWait === true) {
      print(dep, deploymentText);
      return 0;
    }
    let shown = 0;
    for (;;) {
      const d = await api.call<DeploymentView>('GET', `${apps}/${app}/deployments/${dep.deploymentId}`);
      if (!json) for (const line of d.buildLog.slice(shown)) out(`  ${line}`);
      shown = d.buildLog.length;
      if (d.state === 'live' || d.state === 'failed') {
        const view = await api.call<AppView>('GET', `${apps}/${app}`);
        print({ deployment: d, app: view }, () =>
          d.state === 'live' ? `${d.deploymentId} is live: ${view.url}` : `${d.deploymentId} failed: ${d.reason}`,
        );
        return d.state === 'live' ? 0 : 1;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  switch (action) {
    case 'create': {
      if (options.name === undefined) throw new ConfigError('apps create needs --name NAME');
      const body: Record<string, unknown> = { name: options.name, env: parseAssignments(positional) };
      if (options.apiKeyEnv !== undefined) body.apiKeyEnv = options.apiKeyEnv;
      if (options.healthPath !== undefined) body.healthPath = options.healthPath;
      print(await api.call<AppView>('POST', apps, body), appText);
      return 0;
    }
    case 'list':
      print((await api.call<{ data: AppView[] }>('GET', apps)).data, (l) =>
        l.length === 0 ? 'no apps' : l.map(appText).join('\n'),
      );
      return 0;
    case 'get':
      print(await api.call<AppView>('GET', `${apps}/${appId()}`), appText);
      return 0;
    case 'deploy': {
      const app = appId();
      let dep: DeploymentView;
      if (options.repository !== undefined) {
        dep = await api.call<DeploymentView>('POST', `${apps}/${app}/deployments`, {
          repository: options.repository,
          ...(options.ref !== undefined ? { ref: options.ref } : {}),
        });
      } else {
        const source = positional[1];
        if (!source) throw new ConfigError('apps deploy needs a directory, a .tar.gz archive, or --repository URL');
        if (!fs.existsSync(source)) throw new ConfigError(`no such file or directory: ${source}`);
        let archive: Buffer;
        if (fs.statSync(source).isDirectory()) {
          const packed = packDirectory(source);
          if (!json)
            out(`packed ${packed.files.length} files from ${path.resolve(source)} (${packed.archive.length} bytes)`);
          archive = packed.archive;
        } else archive = fs.readFileSync(source);
        dep = await api.call<DeploymentView>('POST', `${apps}/${app}/deployments`, archive, 'application/gzip');
      }
      return waitFor(app, dep);
    }
    case 'deployments':
      print(
        (await api.call<{ data: DeploymentView[] }>('GET', `${apps}/${appId()}/deployments`)).data,
        (l) => l.map(deploymentText).join('\n') || 'no deployments',
      );
      return 0;
    case 'logs': {
      const app = appId();
      if (options.follow !== true) {
        print(
          (await api.call<{ data: LogLine[] }>('GET', `${apps}/${app}/logs?lines=${Number(options.lines)}`)).data,
          (l) => l.map(logText).join('\n'),
        );
        return 0;
      }
      const r = await api.stream(`${apps}/${app}/logs?follow=1&lines=${Number(options.lines)}`);
      if (!r.ok || !r.body) throw new Error(`Hearth answered ${r.status}: ${await r.text()}`);
      const decoder = new TextDecoder();
      let buffered = '';
      for await (const chunk of r.body) {
        buffered += decoder.decode(chunk as Uint8Array, { stream: true });
        const events = buffered.split('\n\n');
        buffered = events.pop() ?? '';
        for (const e of events) {
          const data = e.split('\n').find((l) => l.startsWith('data: '));
          if (data) out(json ? data.slice(6) : logText(JSON.parse(data.slice(6)) as LogLine));
        }
      }
      return 0;
    }
    case 'env': {
      const [sub, id, ...items] = positional;
      if ((sub !== 'set' && sub !== 'unset') || !id)
        throw new ConfigError('usage: hearth apps env set APP KEY=VALUE ... | hearth apps env unset APP KEY ...');
      if (items.length === 0) throw new ConfigError(`apps env ${sub} needs at least one variable`);
      const env = sub === 'set' ? parseAssignments(items) : Object.fromEntries(items.map((k) => [k, null]));
      print(await api.call<AppView>('PATCH', `${apps}/${encodeURIComponent(id)}`, { env }), appText);
      return 0;
    }
    case 'rollback': {
      const app = appId();
      if (!positional[1])
        throw new ConfigError('apps rollback needs a deployment id (see npx hearth apps deployments APP)');
      return waitFor(
        app,
        await api.call<DeploymentView>('POST', `${apps}/${app}/rollback`, { deploymentId: positional[1] }),
      );
    }
    case 'restart':
      print(await api.call<AppView>('POST', `${apps}/${appId()}/restart`), appText);
      return 0;
    case 'delete':
      print(await api.call<{ appId: string }>('DELETE', `${apps}/${appId()}`), (v) => `deleted ${v.appId}`);
      return 0;
    default:
      throw new ConfigError(
        `unknown apps action '${action}' (create, list, get, deploy, deployments, logs, env, rollback, restart, delete)`,
      );
  }
}
