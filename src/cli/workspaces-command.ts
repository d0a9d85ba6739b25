import { settingsHelp } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';
import type { WorkspaceView, YamView } from '../workspaces/workspace-views.ts';
import { ConfigError, commandArgs } from './cli-args.ts';
import { MANAGEMENT_SETTINGS, withManagement } from './management-context.ts';

const SPECS: SettingSpec[] = [
  ...MANAGEMENT_SETTINGS,
  {
    key: 'name',
    flag: '--name',
    env: 'HEARTH_WORKSPACE_NAME',
    type: 'string',
    default: undefined,
    help: 'Name of the new workspace (create)',
  },
];

export const WORKSPACES_HELP = `Usage: hearth workspaces <create|list|get|delete|yam> [options]

  hearth workspaces create --name NAME   Create a workspace
  hearth workspaces list                 List the account's workspaces
  hearth workspaces get ID               Show a workspace and its Yam
  hearth workspaces delete ID            Delete a workspace with all its inference projects
  hearth workspaces yam ID               Create the workspace's Yam (its application host) and wait until ready

Mirrors /api/v1/workspaces, working on the data dir directly (safe while a server runs on it).

Options:
${settingsHelp(SPECS)}`;

const yamText = (y: YamView | null) => (y === null ? 'no Yam' : `Yam ${y.state}${y.error ? ` (${y.error})` : ''}`);
const workspaceText = (w: WorkspaceView) => `${w.workspaceId}\t${w.name}\tcreated ${w.createdAt}\t${yamText(w.yam)}`;

export async function workspacesCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const args = commandArgs(argv, SPECS, WORKSPACES_HELP, out);
  if (typeof args === 'number') return args;
  const { action, positional, options, print } = args;
  const id = () => {
    if (!positional[0])
      throw new ConfigError(`workspaces ${action} needs a workspace id (see npx hearth workspaces list)`);
    return positional[0];
  };
  return withManagement(options, async ({ management: m, account, settle }) => {
    switch (action) {
      case 'create': {
        if (options.name === undefined) throw new ConfigError('workspaces create needs --name NAME');
        print(await m.createWorkspace(account, { name: options.name }), workspaceText);
        return 0;
      }
      case 'list': {
        const list = m.listWorkspaces(account);
        print(list.data, (l) => (l.length === 0 ? 'no workspaces' : l.map(workspaceText).join('\n')));
        return 0;
      }
      case 'get':
        print(m.getWorkspace(account, id()), workspaceText);
        return 0;
      case 'delete': {
        const r = await m.deleteWorkspace(account, id());
        print(r, (v) => `deleted ${v.workspaceId} and its ${v.projectsDeleted} inference project(s)`);
        return 0;
      }
      case 'yam': {
        const workspaceId = id();
        await m.putYam(account, workspaceId);
        await settle();
        const yam = m.getYam(account, workspaceId);
        print(yam, (y) => `${workspaceId}\t${yamText(y)}`);
        return yam.state === 'ready' ? 0 : 1;
      }
      default:
        throw new ConfigError(`unknown workspaces action '${action}' (create, list, get, delete, yam)`);
    }
  });
}
