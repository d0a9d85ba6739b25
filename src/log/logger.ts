/**
 * JSON-lines logger on stderr. Contract: no key, token or secret ever reaches a log line; every string
 * field passes through `redact`, which masks anything shaped like a Hearth key/token or a bearer header.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

const SECRET_PATTERNS: RegExp[] = [
  /\bh[kp]_[A-Za-z0-9]+_[A-Za-z0-9_-]{8,}/g, // Hearth API keys and project tokens
  /(bearer\s+)[^\s"',]+/gi,
  /\bsk-[A-Za-z0-9_-]{8,}/g, // OpenAI-style provider keys
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g,
  /\bAIza[0-9A-Za-z_-]{20,}/g, // Google API keys
];

export function redact(text: string): string {
  let out = text;
  for (const p of SECRET_PATTERNS)
    out = out.replace(p, (m, prefix?: string) =>
      typeof prefix === 'string' && /bearer/i.test(prefix) ? `${prefix}[redacted]` : '[redacted]',
    );
  return out;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export type LogSink = (line: string) => void;

function serializeError(err: Error): Record<string, unknown> {
  return { name: err.name, message: err.message, stack: err.stack };
}

export function createLogger(
  level: LogLevel = 'info',
  sink: LogSink = (l) => process.stderr.write(l),
  base: Record<string, unknown> = {},
): Logger {
  const min = ORDER[level];
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return;
    const record: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, msg, ...base, ...fields };
    const json = JSON.stringify(record, (_k, v: unknown) => (v instanceof Error ? serializeError(v) : v));
    sink(`${redact(json)}\n`);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger(level, sink, { ...base, ...fields }),
  };
}

/** A logger that drops everything (tests, library use). */
export const silentLogger: Logger = createLogger('error', () => {});
