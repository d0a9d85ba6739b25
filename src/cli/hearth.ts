import { ConfigError } from '../config/config.ts';
import { refuseUnsupportedRuntime } from '../http/runtime-support.ts';
import { terminalSafe } from './terminal-text.ts';

/** The `hearth` command: serve, keys (and the record commands). Exit codes: 0 ok, 1 failed, 2 usage. */
const HELP = `Usage: hearth <command> [options]

Commands:
  serve        Start the inference service (npx hearth serve --help, --help-all)
  config       Print the effective serve settings and their sources (npx hearth config print --help)
  keys         Create, list and revoke API keys (npx hearth keys --help)
  users        Create, list and delete users who sign in to the dashboard (npx hearth users --help)
  workspaces   Create, list, show and delete workspaces; create their Yam (npx hearth workspaces --help)
  projects     Manage inference projects: create, list, get, update, delete, rotate-token (npx hearth projects --help)
  apps         Deploy and run apps on a workspace's Yam, through the running server (npx hearth apps --help)
  db           PostgreSQL records: apply migrations, import an LMDB data dir (npx hearth db --help)

Run "npx hearth <command> --help" for a command's options ("hearth" alone where it is installed on the PATH).`;

type Command = (argv: string[], out: (s: string) => void) => Promise<number>;
/** Loaded on demand, so `hearth keys` does not pay for loading the engine. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: async () => (await import('./serve-command.ts')).serveCommand,
  config: async () => (await import('./config-command.ts')).configCommand,
  keys: async () => (await import('./keys-command.ts')).keysCommand,
  users: async () => (await import('./users-command.ts')).usersCommand,
  workspaces: async () => (await import('./workspaces-command.ts')).workspacesCommand,
  projects: async () => (await import('./projects-command.ts')).projectsCommand,
  apps: async () => (await import('./apps-command.ts')).appsCommand,
  db: async () => (await import('./db-command.ts')).dbCommand,
};

export async function runCli(
  argv: string[],
  out: (s: string) => void = (s) => process.stdout.write(`${terminalSafe(s)}\n`),
): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    out(HELP);
    return name ? 0 : 2;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`hearth: unknown command '${name}'\n\n${HELP}\n`);
    return 2;
  }
  if (name === 'serve' && !rest.some((a) => a === '--help' || a === '--help-all' || a === '-h')) {
    // Before anything loads uWebSockets.js or a model: an unsupported runtime is refused at once (exit 2).
    const refused = await refuseUnsupportedRuntime();
    if (refused) {
      process.stderr.write(`${refused}\n`);
      return 2;
    }
  }
  try {
    const command = await load();
    return await command(rest, out);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`hearth ${name}: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`hearth ${name}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/hearth.ts')) {
  const code = await runCli(process.argv.slice(2));
  process.exitCode = code;
}
