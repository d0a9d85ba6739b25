import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/apps/deployment-builder.ts';
import { LineSplitter, MAX_LOG_LINE } from '../../../src/apps/log-ring.ts';
import { testSandbox } from '../../helpers/sandbox-options.ts';

/**
 * A build step's output is the app's: each line of it that reaches the build log (held in Hearth's memory
 * during the build, the last 2,000 lines, and written whole to build-logs/<deploymentId>.log beside the
 * releases) is bounded like a line of the app's own log. Before, a build printing long lines arrived in
 * 64 KiB pieces, so one build held ~130 MB in Hearth's main process and left a file that size.
 */
const NO_SANDBOX = testSandbox('none');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-build-log-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('build log lines', () => {
  it(`are at most ${MAX_LOG_LINE} characters (and a mark), however long the lines a build prints`, async () => {
    const script =
      "const l = 'y'.repeat(300000); for (let i = 0; i < 4; i++) process.stdout.write(l + '\\n'); console.log('done')";
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ scripts: { build: `node -e "${script}"` } }));
    const lines: string[] = [];
    await buildApp(dir, NO_SANDBOX, {}, 30_000, (l) => lines.push(l));
    expect(lines).toContain('done');
    expect(lines.filter((l) => l.startsWith('yyy')).length).toBe(4); // one entry per line printed, cut
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(MAX_LOG_LINE + 3);
  });

  it('split at any chunk boundary, short lines, CRLF and a cut line come out the same', () => {
    const text = `one\r\n${'z'.repeat(MAX_LOG_LINE * 3)}\ntwo\n${'w'.repeat(MAX_LOG_LINE + 1)}`;
    for (const size of [1, 7, 100, 8191, 8193, text.length]) {
      const lines: string[] = [];
      const splitter = new LineSplitter((l) => lines.push(l));
      for (let i = 0; i < text.length; i += size) splitter.push(text.slice(i, i + size));
      splitter.flush();
      expect(lines, String(size)).toEqual([
        'one',
        `${'z'.repeat(MAX_LOG_LINE)}...`,
        'two',
        `${'w'.repeat(MAX_LOG_LINE)}...`,
      ]);
    }
  });
});
