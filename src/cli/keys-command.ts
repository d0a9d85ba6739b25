import { settingsHelp } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';
import { ApiKeyRepository, DEFAULT_ACCOUNT_ID, NO_LIMITS } from '../accounts/api-key-repository.ts';
import type { KeyLimits } from '../store/database.ts';
import { ConfigError, RECORDS_SETTINGS, JSON_SETTING, commandArgs } from './cli-args.ts';
import { withStore } from './record-store.ts';

const SPECS: SettingSpec[] = [
  ...RECORDS_SETTINGS,
  {
    key: 'name',
    flag: '--name',
    env: 'HEARTH_KEY_NAME',
    type: 'string',
    default: undefined,
    help: 'Name of the new key (create)',
  },
  {
    key: 'priority',
    flag: '--priority',
    env: 'HEARTH_KEY_PRIORITY',
    type: 'enum',
    values: ['interactive', 'batch'],
    default: 'interactive',
    help: "The new key's scheduling priority (create): interactive, or batch (runs after interactive work and yields its slot to it)",
  },
  {
    key: 'account',
    flag: '--account',
    env: 'HEARTH_ACCOUNT',
    type: 'string',
    default: DEFAULT_ACCOUNT_ID,
    help: 'Account the key belongs to',
  },
  JSON_SETTING,
];

export const KEYS_HELP = `Usage: hearth keys <create|list|revoke> [options]

  hearth keys create --name NAME   Create an API key; the key is printed once, store it now
                   [--priority batch]  ... whose generations run at batch priority
  hearth keys list                 List keys (id, name, created, last used, revoked; never the secret)
  hearth keys revoke ID            Revoke a key at once

Works on the same data dir as a running server (safe while it runs).

Options:
${settingsHelp(SPECS)}`;

/** `\tlimits 60 rpm, 2 concurrent, batch priority` for a key with limits or batch priority; '' without. */
function limitsText(l: KeyLimits): string {
  const parts = [
    l.requestsPerMinute !== null && `${l.requestsPerMinute} rpm`,
    l.tokensPerMinute !== null && `${l.tokensPerMinute} tpm`,
    l.maxConcurrent !== null && `${l.maxConcurrent} concurrent`,
    l.priority === 'batch' && 'batch priority',
  ].filter(Boolean);
  return parts.length === 0 ? '' : `\tlimits ${parts.join(', ')}`;
}

export async function keysCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const args = commandArgs(argv, SPECS, KEYS_HELP, out);
  if (typeof args === 'number') return args;
  const { action, positional, options, print } = args;
  return withStore(options, async (store) => {
    const keys = new ApiKeyRepository(store);
    const account = String(options.account);
    switch (action) {
      case 'create': {
        if (!options.name) throw new ConfigError('keys create needs --name NAME');
        const priority = options.priority === 'batch' ? 'batch' : 'interactive';
        const k = await keys.create(String(options.name), account, { ...NO_LIMITS, priority });
        print(
          k,
          () =>
            `${k.key}\n\nid: ${k.id}  name: ${k.name}  account: ${k.accountId}  priority: ${k.limits.priority}\nThis key is shown once: store it now. Use it as "Authorization: Bearer <key>".`,
        );
        return 0;
      }
      case 'list': {
        const list = keys.list(account);
        print(list, (l) =>
          l.length === 0
            ? 'no keys'
            : l
                .map(
                  (k) =>
                    `${k.id}\t${k.name}\tcreated ${k.createdAt}\tlast used ${k.lastUsedAt ?? 'never'}${limitsText(k.limits)}${k.revokedAt ? `\tREVOKED ${k.revokedAt}` : ''}`,
                )
                .join('\n'),
        );
        return 0;
      }
      case 'revoke': {
        const id = positional[0];
        if (!id) throw new ConfigError('keys revoke needs a key id (see npx hearth keys list)');
        if (!(await keys.revoke(id, account))) {
          out(`no key with id ${id}`);
          return 1;
        }
        out(`revoked ${id}`);
        return 0;
      }
      default:
        throw new ConfigError(`unknown keys action '${action}' (create, list, revoke)`);
    }
  });
}
