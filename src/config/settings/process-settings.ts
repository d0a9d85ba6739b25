import os from 'node:os';
import type { SettingSpec } from '../setting-spec.ts';

const cores = () => Math.max(1, os.availableParallelism());

/**
 * The process itself: shutdown grace, log level and the core count threads are planned for. One entry per setting;
 * config-spec.ts joins the groups into SERVE_SETTINGS in this order.
 */
export const PROCESS_SETTINGS = [
  {
    key: 'shutdownGraceMs',
    flag: '--shutdown-grace-ms',
    env: 'HEARTH_SHUTDOWN_GRACE_MS',
    group: 'everyday',
    type: 'int',
    min: 0,
    max: 600000,
    default: 10000,
    help: 'On SIGTERM/SIGINT: how long requests in flight may finish before they are cut and the process exits (see docs/operations.md, "Shutdown")',
  },
  {
    key: 'logLevel',
    flag: '--log-level',
    env: 'HEARTH_LOG_LEVEL',
    group: 'everyday',
    type: 'enum',
    values: ['debug', 'info', 'warn', 'error'],
    default: 'info',
    help: 'Log verbosity (JSON lines on stderr)',
  },
  {
    key: 'defaultCores',
    flag: '--cores',
    env: 'HEARTH_CORES',
    group: 'testing',
    type: 'int',
    min: 1,
    max: 1024,
    default: cores,
    help: 'CPU cores to plan threads for',
    doc: { default: 'the core count the OS reports' },
  },
] as const satisfies readonly SettingSpec[];
