import path from 'node:path';
import type { Config } from '../config/config.ts';
import type { AppHostOptions } from './app-host-options.ts';

/** The app host's options from `hearth serve`'s configuration (seconds and MiB turned into ms and bytes). */
export function appHostOptionsFrom(config: Config): AppHostOptions {
  return {
    rootDir: config.appDir ?? path.join(config.dataDir, 'apps'),
    sandbox: {
      mode: config.appSandbox,
      bwrapPath: config.appBwrap,
      memoryBytes: config.appMemoryLimit * 1024 * 1024,
      maxProcesses: config.appMaxProcesses,
      maxOpenFiles: config.appMaxOpenFiles,
      network: { mode: config.appNetwork, pastaPath: config.appPasta },
    },
    listenHost: config.host,
    archiveLimit: config.appArchiveLimit,
    maxFiles: config.appMaxFiles,
    maxUnpackedBytes: config.appMaxUnpackedBytes,
    startTimeoutMs: config.appStartTimeout * 1000,
    buildTimeoutMs: config.appBuildTimeout * 1000,
    repositories: config.appRepositories,
    gracePeriodMs: config.appGracePeriod * 1000,
    stopTimeoutMs: 5_000,
    backoffInitialMs: 1_000,
    backoffMaxMs: 60_000,
  };
}
