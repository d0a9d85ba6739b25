import fs from 'node:fs';
import type { HearthProcess } from './hearth-process.ts';

/**
 * A suite's afterAll for a `hearth serve` child and the folders it wrote: stops `hearth` (when it started), then
 * removes each of `dirs` that is set. The order matters: the data dir must outlive the process that writes it.
 */
export async function stopThenRemove(
  hearth: HearthProcess | undefined,
  ...dirs: Array<string | undefined>
): Promise<void> {
  await hearth?.stop();
  for (const dir of dirs) if (dir) fs.rmSync(dir, { recursive: true, force: true });
}
