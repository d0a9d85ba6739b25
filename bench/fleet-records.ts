import { ApiKeyRepository } from '../src/accounts/api-key-repository.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { fmt, recordResults, table } from './lib/report.ts';

/**
 * bench:fleet-records: how fast a change made on one replica reaches another through PostgreSQL (LISTEN/NOTIFY,
 * the 500 ms poll as fallback). Two PostgresStores on one database (two replicas in one process); for each of
 * BENCH_KEYS (50) keys: create on A, wait until B authenticates it, revoke on A, and time from the revocation's
 * commit until B refuses the key (B polls its mirror every 1 ms). Also the write itself (create, revoke) as A
 * sees it. Usage: node --import tsx bench/fleet-records.ts --database-url URL (a Hearth-owned or empty database).
 */
const at = process.argv.indexOf('--database-url');
const url = at > 0 ? process.argv[at + 1] : process.env.BENCH_DATABASE_URL;
if (!url) throw new Error('give --database-url URL');
const N = Number(process.env.BENCH_KEYS ?? 50);

const a = await PostgresStore.open(url);
const b = await PostgresStore.open(url);
const keysA = new ApiKeyRepository(a);
const keysB = new ApiKeyRepository(b);
const until = async (check: () => boolean) => {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > 5_000) throw new Error('no propagation within 5 s');
    await new Promise((r) => setTimeout(r, 1));
  }
};
const refused = (key: string) => {
  try {
    keysB.authenticate(key);
    return false;
  } catch {
    return true;
  }
};
const propagation: number[] = [];
const writes: number[] = [];
try {
  for (let i = 0; i < N; i++) {
    let t = performance.now();
    const k = await keysA.create(`bench ${i}`, 'bench');
    writes.push(performance.now() - t);
    await until(() => !refused(k.key));
    t = performance.now();
    await keysA.revoke(k.id, 'bench');
    const committed = performance.now();
    writes.push(committed - t);
    await until(() => refused(k.key));
    propagation.push(performance.now() - committed);
  }
} finally {
  await a.close();
  await b.close();
}
const pct = (xs: number[], p: number) =>
  [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const row = (name: string, xs: number[]) => [
  name,
  fmt.int(xs.length),
  `${pct(xs, 50).toFixed(1)} ms`,
  `${pct(xs, 99).toFixed(1)} ms`,
  `${Math.max(...xs).toFixed(1)} ms`,
];
const markdown = `Two replicas' stores on one PostgreSQL database (same process, loopback); ${N} keys created then revoked on A.

${table(['what', 'samples', 'p50', 'p99', 'max'], [row('revocation: commit on A -> refused on B', propagation), row('a write on A (create or revoke), to durable', writes)])}

Contract: a revoked key is refused by every replica within 1 s.`;
recordResults(
  'fleet-records',
  'Fleet records propagation',
  { n: N, propagationMs: propagation, writeMs: writes },
  markdown,
);
