import { settingsHelp } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';
import { parseUserInput } from '../accounts/account-input.ts';
import { UserRepository, userView } from '../accounts/user-repository.ts';
import type { UserView } from '../accounts/account-views.ts';
import { ConfigError, RECORDS_SETTINGS, JSON_SETTING, commandArgs } from './cli-args.ts';
import { withStore } from './record-store.ts';
import { readPassword } from './password-prompt.ts';

const SPECS: SettingSpec[] = [
  ...RECORDS_SETTINGS,
  {
    key: 'email',
    flag: '--email',
    env: 'HEARTH_USER_EMAIL',
    type: 'string',
    default: undefined,
    help: 'Email of the new user (create)',
  },
  {
    key: 'account',
    flag: '--account',
    env: 'HEARTH_ACCOUNT',
    type: 'string',
    default: undefined,
    help: 'Account of the user (create: required; list: only this account)',
  },
  {
    key: 'role',
    flag: '--role',
    env: 'HEARTH_USER_ROLE',
    type: 'enum',
    values: ['owner', 'member'],
    default: 'member',
    help: 'Role of the new user',
  },
  JSON_SETTING,
];

export const USERS_HELP = `Usage: hearth users <create|list|delete> [options]

  hearth users create --email E --account A [--role owner]   Create a user; the password is asked on the
                                                             terminal, or read from stdin when piped
  hearth users list [--account A]                            List users (never a password hash)
  hearth users delete ID                                     Remove a user and end its sessions
                                                             (the last owner of an account stays)

Works on the same data dir as a running server (safe while it runs).

Options:
${settingsHelp(SPECS)}`;

const line = (u: UserView) =>
  `${u.id}\t${u.email}\t${u.role}\taccount ${u.accountId}\tcreated ${u.createdAt}\tlast sign-in ${u.lastSignInAt ?? 'never'}`;

export async function usersCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const args = commandArgs(argv, SPECS, USERS_HELP, out);
  if (typeof args === 'number') return args;
  const { action, positional, options, print } = args;
  if (action === 'create') {
    // Validate and read the password before the store is opened, so a typo costs no prompt.
    if (!options.email) throw new ConfigError('users create needs --email E');
    if (!options.account)
      throw new ConfigError('users create needs --account A (the account the user belongs to, e.g. default)');
    const password = await readPassword('Password: ');
    if (password === '') {
      throw new ConfigError(
        `no password given: type it when asked (on a terminal), or pipe it on stdin: printf '%s' "$PASSWORD" | npx hearth users create --email ${options.email} --account ${options.account}`,
      );
    }
    const input = parseUserInput({ email: options.email, password, role: options.role });
    return withStore(options, async (store) => {
      const users = new UserRepository(store);
      const u = userView(await users.create({ ...input, accountId: String(options.account) }));
      print(u, () => `created ${u.role} ${u.email} (id ${u.id}, account ${u.accountId})`);
      return 0;
    });
  }
  if (action === 'list') {
    return withStore(options, async (store) => {
      const users = new UserRepository(store);
      const list = users.list(options.account === undefined ? undefined : String(options.account)).map(userView);
      print(list, (l) => (l.length === 0 ? 'no users' : l.map(line).join('\n')));
      return 0;
    });
  }
  if (action === 'delete') {
    const id = positional[0];
    if (!id) throw new ConfigError('users delete needs a user id (see npx hearth users list)');
    return withStore(options, async (store) => {
      const users = new UserRepository(store);
      const result = await users.delete(id, options.account === undefined ? undefined : String(options.account));
      if (result === 'deleted') out(`deleted ${id}`);
      else
        out(
          result === 'not_found'
            ? `no user with id ${id}`
            : `${id} is the last owner of its account: add another owner first`,
        );
      return result === 'deleted' ? 0 : 1;
    });
  }
  throw new ConfigError(`unknown users action '${action}' (create, list, delete)`);
}
