import { loadServeConfig } from '../config/config.ts';
import { SERVE_SETTINGS } from '../config/config-spec.ts';
import { checkLocalModels } from '../config/local-model-check.ts';
import { groupedSettingsHelp } from '../config/settings-help.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { startHearth } from '../main.ts';

/** Exit codes of `hearth serve` after a signal (docs/operations.md "Shutdown"). 1 and 2 stay the CLI's: failed to start, usage. */
export const SERVE_EXIT = { clean: 0, unclean: 3, forced: 4 } as const;
/** How long shutdown may take beyond the grace period (stopping app processes: up to their 5 s stop time-out; workers, the store, sockets) before the exit is forced. */
export const SHUTDOWN_BOUND_MS = 15_000;
/** After a clean close the event loop must empty; if something still holds it this long, the exit is forced. */
const LINGER_MS = 2_000;

/** `hearth serve --help` (the everyday settings) or, with `all`, `--help-all` (every setting). */
export function serveHelp(all: boolean): string {
  return `Usage: hearth serve [options]

Starts the HTTP server at once and loads the model in the background (chat calls answer
503 model_warming_up until it is ready). Every option can also be set with its HEARTH_* variable,
or in a YAML file given with --config (keys: the flag names without --); flags win over
variables, which win over the file. \`hearth config print\` shows the effective settings.

On SIGTERM or SIGINT it stops accepting, lets running requests finish for --shutdown-grace-ms,
then closes everything and exits; a second signal exits at once. Exit codes: 0 clean shutdown,
3 the grace period expired (requests were cut) or a resource failed to close, 4 shutdown did not
finish within the grace period plus ${SHUTDOWN_BOUND_MS / 1000} s (forced), 128 + signal number after a second signal.

${groupedSettingsHelp(SERVE_SETTINGS, all)}`;
}

const SIGNAL_NUMBERS = { SIGINT: 2, SIGTERM: 15 } as const;
type StopSignal = keyof typeof SIGNAL_NUMBERS;

export async function serveCommand(argv: string[], out: (s: string) => void): Promise<number> {
  if (argv.includes('--help-all') || argv.includes('--help') || argv.includes('-h')) {
    out(serveHelp(argv.includes('--help-all')));
    return 0;
  }
  const { config, warnings } = loadServeConfig(argv);
  checkLocalModels(config.models);
  const log = createLogger(config.logLevel);
  // Signals are handled from before the start, so one that arrives while Hearth starts is not the default
  // (instant death) but a shutdown as soon as the start is done. The first signal arms the forced-exit bound;
  // a second one exits at once.
  let resolveFirst: (signal: StopSignal) => void = () => {};
  const first = new Promise<StopSignal>((resolve) => {
    resolveFirst = resolve;
  });
  let stopping = false;
  const onSignal = (signal: StopSignal) => {
    if (stopping) {
      log.warn('second signal: exiting at once', { signal });
      process.exit(128 + SIGNAL_NUMBERS[signal]);
    }
    stopping = true;
    log.info('shutting down', { signal, graceMs: config.shutdownGraceMs });
    // Unref'd: it never keeps the process alive; it only fires when something else does.
    const bound = config.shutdownGraceMs + SHUTDOWN_BOUND_MS;
    setTimeout(
      () => forceExit(log, 'shutdown did not finish within the grace period plus the bound', bound),
      bound,
    ).unref();
    resolveFirst(signal);
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  // Logged once the handlers are in place: a supervisor may signal at the first line it reads.
  for (const warning of warnings) log.warn(warning);
  const hearth = await startHearth(config, log);
  await first;
  const outcome = await hearth.close();
  setTimeout(() => forceExit(log, 'the event loop is still busy after shutdown', LINGER_MS), LINGER_MS).unref();
  return outcome.clean ? SERVE_EXIT.clean : SERVE_EXIT.unclean;
}

/** Logs what still holds the event loop, then exits with SERVE_EXIT.forced. */
function forceExit(log: Logger, why: string, afterMs: number): never {
  log.error('forcing exit', { reason: why, afterMs, activeResources: process.getActiveResourcesInfo() });
  process.exit(SERVE_EXIT.forced);
}
