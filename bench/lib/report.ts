import fs from 'node:fs';
import path from 'node:path';
import { describeMachine, machineLine, type MachineInfo } from './machine.ts';

export const BENCH_DIR = path.resolve(import.meta.dirname, '..');
export const OUT_DIR = path.join(BENCH_DIR, 'out');
export const RESULTS_MD = path.join(BENCH_DIR, 'RESULTS.md');

const RESULTS_HEADER = `# Hearth benchmark results

Appended by \`npm run bench\` / \`npm run bench:<name>\` (bench/*.ts); the raw numbers of every run are in
bench/out/*.json (not committed). Each section says where it ran. Numbers from a shared or loaded machine
are noisy: compare runs from the same machine, and look at the load average in the section header.
`;

/** Formats a markdown table. */
export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const line = (cells: Array<string | number>) => `| ${cells.map(String).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

export const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  num: (n: number, digits = 1) =>
    Number.isFinite(n)
      ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
      : 'n/a',
  ms: (n: number) =>
    Number.isFinite(n) ? `${n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n)} ms` : 'n/a',
  mb: (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`,
  pct: (x: number) => `${(x * 100).toFixed(1)}%`,
};

/**
 * One benchmark run's output: JSON under bench/out/<name>-<timestamp>.json (machine info included) and
 * a markdown section appended to bench/RESULTS.md. Returns the JSON path.
 */
export function recordResults(
  name: string,
  title: string,
  data: unknown,
  markdown: string,
  machine: MachineInfo = describeMachine(),
): string {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const stamp = machine.date.replace(/[:.]/g, '-');
  const jsonPath = path.join(OUT_DIR, `${name}-${stamp}.json`);
  fs.writeFileSync(jsonPath, `${JSON.stringify({ name, machine, data }, null, 2)}\n`);
  if (!fs.existsSync(RESULTS_MD)) fs.writeFileSync(RESULTS_MD, RESULTS_HEADER);
  const section = `\n## ${title} (\`npm run bench:${name}\`)\n\n${machineLine(machine)}\n\n${markdown.trim()}\n`;
  fs.appendFileSync(RESULTS_MD, section);
  console.log(section);
  console.log(`raw results: ${path.relative(process.cwd(), jsonPath)}`);
  return jsonPath;
}
