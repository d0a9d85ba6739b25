import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * `npm run bench`: every benchmark scenario in sequence, each in its own process (so one scenario's
 * servers and heap never disturb the next), each appending its section to bench/RESULTS.md and its JSON
 * to bench/out/. bench:engine (bench/engine.ts, another owner's) is included when the file exists.
 * Extra arguments select scenarios: `npm run bench -- gateway micro`.
 * Exit status: non-zero when any scenario failed (its target checks included).
 */
const BENCH = import.meta.dirname;
const ALL = ['micro', 'gateway', 'stream', 'overload', 'engine'];
const wanted = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ALL;
const unknown = wanted.filter((w) => !ALL.includes(w));
if (unknown.length > 0) {
  console.error(`unknown scenario(s): ${unknown.join(', ')}; known: ${ALL.join(', ')}`);
  process.exit(2);
}

const summary: Array<{ name: string; status: string; seconds: number }> = [];
for (const name of wanted) {
  const file = path.join(BENCH, `${name}.ts`);
  if (!fs.existsSync(file)) {
    console.log(`\n=== bench:${name}: skipped (bench/${name}.ts does not exist yet)`);
    summary.push({ name, status: 'skipped: no file', seconds: 0 });
    continue;
  }
  console.log(`\n=== bench:${name}`);
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], {
    stdio: 'inherit',
    cwd: path.resolve(BENCH, '..'),
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  summary.push({
    name,
    status: r.error ? `error: ${r.error.message}` : r.status === 0 ? 'ok' : `exit ${r.status ?? r.signal}`,
    seconds,
  });
}

console.log('\n=== summary');
for (const s of summary) console.log(`bench:${s.name.padEnd(9)} ${s.status.padEnd(20)} ${s.seconds} s`);
console.log(
  `results: ${path.relative(process.cwd(), path.join(BENCH, 'RESULTS.md'))}, raw JSON in ${path.relative(process.cwd(), path.join(BENCH, 'out'))}/`,
);
if (summary.some((s) => s.status !== 'ok' && !s.status.startsWith('skipped'))) process.exitCode = 1;
