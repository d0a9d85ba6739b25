/**
 * A directory of generated model files named by a hash of what made them, each written at most once:
 * written to a unique temporary file in the same directory and renamed into place (rename is atomic on
 * POSIX), so parallel test files and processes never see a half-written model. Concurrent writers of the
 * same name produce identical bytes; the last rename wins harmlessly. Within one process, concurrent
 * calls for the same path share one write.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A hash of the generator's own source (every .ts file in models/), part of every generated file's
 * name: when the writer changes, files written by an older version are not reused. Computed once.
 */
let fingerprint: string | undefined;
export function generatorFingerprint(): string {
  if (fingerprint === undefined) {
    const dir = fileURLToPath(new URL('.', import.meta.url));
    const hash = createHash('sha256');
    for (const name of readdirSync(dir)
      .filter((n) => n.endsWith('.ts'))
      .sort()) {
      hash
        .update(name)
        .update('\0')
        .update(readFileSync(join(dir, name)))
        .update('\0');
    }
    fingerprint = hash.digest('hex');
  }
  return fingerprint;
}

/** Where benchmark-size generated models live: $HEARTH_CACHE_DIR, else ~/.cache/hearth/models. */
export function defaultModelCacheDir(): string {
  const fromEnv = process.env['HEARTH_CACHE_DIR'];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : join(homedir(), '.cache', 'hearth', 'models');
}

/** Where test models live: $HEARTH_TEST_MODELS_DIR, else <os tmpdir>/hearth-test-models. */
export function defaultTestModelDir(): string {
  const fromEnv = process.env['HEARTH_TEST_MODELS_DIR'];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : join(tmpdir(), 'hearth-test-models');
}

/** A short hash of JSON-able data (object keys sorted) and the generator's source, for file names. */
export function optionsHash(data: unknown): string {
  const canonical = JSON.stringify(data, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
  return createHash('sha256').update(`${generatorFingerprint()}:${canonical}`).digest('hex').slice(0, 16);
}

const inFlight = new Map<string, Promise<string>>();

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns `path`, first calling `write(temporaryPath)` and renaming the result into place if `path`
 * does not exist yet. A failed write leaves no file behind.
 */
export function ensureGeneratedFile(path: string, write: (temporaryPath: string) => Promise<unknown>): Promise<string> {
  const pending = inFlight.get(path);
  if (pending !== undefined) return pending;
  const job = (async () => {
    if (await exists(path)) return path;
    await mkdir(join(path, '..'), { recursive: true });
    const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await write(temporary);
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    return path;
  })().finally(() => inFlight.delete(path));
  inFlight.set(path, job);
  return job;
}
