import { settingsHelp } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';
import type { ProjectView, ProjectViewWithToken } from '../workspaces/workspace-views.ts';
import { ConfigError, commandArgs } from './cli-args.ts';
import { MANAGEMENT_SETTINGS, withManagement } from './management-context.ts';

const SPECS: SettingSpec[] = [
  ...MANAGEMENT_SETTINGS,
  {
    key: 'workspace',
    flag: '--workspace',
    env: 'HEARTH_WORKSPACE',
    type: 'string',
    default: undefined,
    help: 'Workspace of the project (every action)',
  },
  {
    key: 'name',
    flag: '--name',
    env: 'HEARTH_PROJECT_NAME',
    type: 'string',
    default: undefined,
    help: 'Project name (create, update)',
  },
  {
    key: 'provider',
    flag: '--provider',
    env: 'HEARTH_PROJECT_PROVIDER',
    type: 'string',
    default: undefined,
    help: 'openai, anthropic, gemini or mistral (create)',
  },
  {
    key: 'model',
    flag: '--model',
    env: 'HEARTH_PROJECT_MODEL',
    type: 'string',
    default: undefined,
    help: "The provider's model name (create, update)",
  },
  {
    key: 'providerApiKey',
    flag: '--provider-api-key',
    env: 'HEARTH_PROVIDER_API_KEY',
    type: 'string',
    default: undefined,
    secret: true,
    help: 'The provider API key, stored encrypted (create, update); prefer the variable to keep it out of shell history',
  },
  {
    key: 'temperature',
    flag: '--temperature',
    env: 'HEARTH_PROJECT_TEMPERATURE',
    type: 'string',
    default: undefined,
    help: 'Default temperature 0..2, or "none" to clear it (create, update)',
  },
  {
    key: 'state',
    flag: '--state',
    env: 'HEARTH_PROJECT_STATE',
    type: 'enum',
    values: ['suspended', 'ready'],
    default: undefined,
    help: 'suspended to suspend, ready to resume (update)',
  },
];

export const PROJECTS_HELP = `Usage: hearth projects <create|list|get|update|delete|rotate-token> [options]

  hearth projects create --workspace WS --name NAME --provider P --model M --provider-api-key KEY [--temperature T]
                                             Create an inference project; its bearer token is printed once
  hearth projects list --workspace WS        List the workspace's projects
  hearth projects get ID --workspace WS      Show a project (the provider key as its last four characters)
  hearth projects update ID --workspace WS [--name N] [--model M] [--temperature T|none] [--provider-api-key KEY] [--state suspended|ready]
  hearth projects delete ID --workspace WS   Delete a project; its token stops working at once
  hearth projects rotate-token ID --workspace WS
                                             Issue a new bearer token (printed once); the old one stops working at once

Mirrors /api/v1/workspaces/{workspaceId}/inference, working on the data dir directly (safe while a server
runs on it). Provider keys are encrypted under the master key: give the CLI the same --secret-key /
HEARTH_SECRET_KEY as the server when the server uses one (else both use <data-dir>/master.key).

Options:
${settingsHelp(SPECS)}`;

const projectText = (p: ProjectView) =>
  [
    `${p.projectId}\t${p.name}\t${p.provider}/${p.model}\t${p.state}${p.stateReason ? ` (${p.stateReason})` : ''}`,
    `  endpoint: ${p.endpoint}`,
    `  temperature: ${p.temperature ?? 'provider default'}\tprovider key: ${p.providerKey ? `...${p.providerKey.last4}` : 'none'}\tworkspace: ${p.workspaceId}`,
  ].join('\n');
const withTokenText = (p: ProjectViewWithToken) =>
  `${p.token}\n\n${projectText(p)}\nThis token is shown once: store it now. Use it as "Authorization: Bearer <token>".`;

/** The temperature option as the API takes it: a number, null for "none", the raw text otherwise (refused by validation). */
function temperatureOf(raw: string | number | boolean | undefined): unknown {
  if (raw === undefined) return undefined;
  if (raw === 'none' || raw === 'null') return null;
  const n = Number(raw);
  return typeof raw === 'string' && raw.trim() !== '' && Number.isFinite(n) ? n : raw;
}

export async function projectsCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const args = commandArgs(argv, SPECS, PROJECTS_HELP, out);
  if (typeof args === 'number') return args;
  const { action, positional, options, print } = args;
  if (options.workspace === undefined)
    throw new ConfigError(`projects ${action} needs --workspace ID (see npx hearth workspaces list)`);
  const ws = String(options.workspace);
  const id = () => {
    if (!positional[0])
      throw new ConfigError(`projects ${action} needs a project id (see npx hearth projects list --workspace ${ws})`);
    return positional[0];
  };
  const fields = () => {
    const body: Record<string, unknown> = {};
    for (const key of ['name', 'provider', 'model', 'providerApiKey', 'state'] as const)
      if (options[key] !== undefined) body[key] = options[key];
    if (options.temperature !== undefined) body.temperature = temperatureOf(options.temperature);
    return body;
  };
  return withManagement(options, async ({ management: m, account, settle }) => {
    switch (action) {
      case 'create': {
        const created = await m.createProject(account, ws, fields());
        await settle();
        print({ ...m.getProject(account, ws, created.projectId), token: created.token }, withTokenText);
        return 0;
      }
      case 'list': {
        const list = m.listProjects(account, ws).data;
        print(list, (l) => (l.length === 0 ? 'no inference projects' : l.map(projectText).join('\n')));
        return 0;
      }
      case 'get':
        print(m.getProject(account, ws, id()), projectText);
        return 0;
      case 'update': {
        const projectId = id();
        await m.updateProject(account, ws, projectId, fields());
        await settle();
        print(m.getProject(account, ws, projectId), projectText);
        return 0;
      }
      case 'delete': {
        const r = await m.deleteProject(account, ws, id());
        print(r, (v) => `deleted ${v.projectId}`);
        return 0;
      }
      case 'rotate-token':
        print(await m.rotateToken(account, ws, id()), withTokenText);
        return 0;
      default:
        throw new ConfigError(`unknown projects action '${action}' (create, list, get, update, delete, rotate-token)`);
    }
  });
}
