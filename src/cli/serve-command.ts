import { parseServeConfig, settingsHelp } from '../config/config.ts';
import { SERVE_SETTINGS } from '../config/config-spec.ts';
import { createLogger } from '../log/logger.ts';
import { startHearth } from '../main.ts';

export const SERVE_HELP = `Usage: hearth serve [options]

Starts the HTTP server at once and loads the model in the background (chat calls answer
503 model_warming_up until it is ready). Every option can also be set with its HEARTH_* variable.

Options:
${settingsHelp(SERVE_SETTINGS)}`;

export async function serveCommand(argv: string[], out: (s: string) => void): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(SERVE_HELP);
    return 0;
  }
  const config = parseServeConfig(argv);
  const log = createLogger(config.logLevel);
  const hearth = await startHearth(config, log);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info('shutting down', { signal });
      void hearth.close().then(resolve);
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  return 0;
}
