import { SERVE_SETTINGS, type SettingSpec } from '../config/config-spec.ts';
import { WorkspaceService } from '../workspaces/workspace-service.ts';
import { Provisioner } from '../workspaces/provisioner.ts';
import { createLogger } from '../log/logger.ts';
import { ApiKeyRepository, DEFAULT_ACCOUNT_ID } from '../accounts/api-key-repository.ts';
import { loadMasterKey } from '../store/master-key.ts';
import { ProjectRepository } from '../workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../workspaces/workspace-repository.ts';
import { RECORDS_SETTINGS, JSON_SETTING, type Options } from './cli-args.ts';
import { withStore } from './record-store.ts';

/**
 * What the `workspaces` and `projects` commands share: the options every one of them takes, and the
 * WorkspaceService over the data dir (the same code the HTTP API runs, so the CLI mirrors it). The CLI has
 * no background loop: after a change it settles provisioning at once (a new Yam or project is ready, or
 * failed, when the command returns). Safe while a server runs on the same data dir (LMDB is multi-process).
 */
const serveSetting = (key: string): SettingSpec => SERVE_SETTINGS.find((s) => s.key === key)!;

export const MANAGEMENT_SETTINGS: SettingSpec[] = [
  ...RECORDS_SETTINGS,
  {
    key: 'account',
    flag: '--account',
    env: 'HEARTH_ACCOUNT',
    type: 'string',
    default: DEFAULT_ACCOUNT_ID,
    help: 'Account that owns the records',
  },
  serveSetting('secretKey'),
  {
    key: 'publicUrl',
    flag: '--public-url',
    env: 'HEARTH_PUBLIC_URL',
    type: 'string',
    default: 'http://127.0.0.1:8080',
    help: 'Base URL of the server, for endpoint URLs',
  },
  JSON_SETTING,
];

export interface ManagementContext {
  management: WorkspaceService;
  account: string;
  /** Runs provisioning tasks the last change started, and waits for them. */
  settle(): Promise<void>;
}

/** Opens the store, runs `fn`, closes everything (also on failure). */
export async function withManagement<T>(options: Options, fn: (c: ManagementContext) => Promise<T>): Promise<T> {
  const dataDir = String(options.dataDir);
  const masterKey = loadMasterKey({
    secretKey: options.secretKey === undefined ? undefined : String(options.secretKey),
    dataDir,
  });
  return withStore(options, async (store) => {
    const workspaces = new WorkspaceRepository(store);
    const projects = new ProjectRepository(store, new ProviderKeyCipher(masterKey.key));
    const provisioner = new Provisioner(workspaces, projects, createLogger('error'), { delayMs: 0 });
    const management = new WorkspaceService({
      workspaces,
      projects,
      provisioner,
      baseUrl: () => String(options.publicUrl),
    });
    try {
      return await fn({ management, account: String(options.account), settle: () => provisioner.settle() });
    } finally {
      provisioner.dispose();
    }
  });
}
