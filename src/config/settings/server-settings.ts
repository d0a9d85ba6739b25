import type { SettingSpec } from '../setting-spec.ts';

/**
 * Where the service listens and where it keeps its records: port, host, public URL, config file, data directory,
 * database. One entry per setting; config-spec.ts joins the groups into SERVE_SETTINGS in this order.
 */
export const SERVER_SETTINGS = [
  {
    key: 'configFile',
    flag: '--config',
    env: 'HEARTH_CONFIG',
    group: 'everyday',
    type: 'string',
    default: undefined,
    help: 'A YAML file of settings, keyed by flag name without -- (body-limit-bytes: 2097152); flags and HEARTH_* variables win over it',
  },
  {
    key: 'port',
    flag: '--port',
    env: 'HEARTH_PORT',
    group: 'everyday',
    type: 'int',
    min: 0,
    max: 65535,
    default: 8080,
    help: 'TCP port to listen on (0 = any free port)',
  },
  {
    key: 'host',
    flag: '--host',
    env: 'HEARTH_HOST',
    group: 'everyday',
    type: 'string',
    default: '127.0.0.1',
    help: 'Address to bind; 0.0.0.0 to listen on every interface',
  },
  {
    key: 'publicUrl',
    flag: '--public-url',
    env: 'HEARTH_PUBLIC_URL',
    group: 'everyday',
    type: 'string',
    default: undefined,
    help: 'Base URL clients use, for endpoint URLs in API answers (default http://host:port)',
  },
  {
    key: 'dataDir',
    flag: '--data-dir',
    env: 'HEARTH_DATA_DIR',
    group: 'everyday',
    type: 'string',
    default: './data',
    help: 'Directory of the LMDB records and the master key file',
  },
  {
    key: 'databaseUrl',
    flag: '--database-url',
    env: 'HEARTH_DATABASE_URL',
    group: 'everyday',
    type: 'string',
    default: undefined,
    secret: true,
    help: 'PostgreSQL URL (postgres://user:pass@host:port/db): keep the records there instead of LMDB in --data-dir, shared by every replica started with it',
  },
] as const satisfies readonly SettingSpec[];
