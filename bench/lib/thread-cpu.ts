import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of a server process by thread role, from /proc (Linux; empty elsewhere): where the microseconds of a
 * token go between the threads that share the cores. A role is the thread's name (`comm`): Hearth names its loop
 * thread `hearth-loop`, its persistent ggml compute threads `hearth-compute` and its sampling pool `hearth-sample`;
 * the process's first thread is `main` (Hearth's HTTP and JavaScript thread, llama-server's HTTP thread); child
 * processes (Hearth's managed HAProxy front) count under their own name. Unnamed threads of one name add up (Node's
 * worker threads are all `node`; llama-server's compute threads all `llama-server`).
 */
export type ThreadCpu = Map<string, { ticks: number; voluntarySwitches: number; involuntarySwitches: number }>;

/** A snapshot of every thread's CPU ticks and context switches, by role. */
export function threadCpu(pid: number): ThreadCpu {
  const out: ThreadCpu = new Map();
  add(out, pid, true);
  return out;
}

/** CPU microseconds per unit (token) by role between two snapshots, largest first; `null` when /proc is absent. */
export function cpuPerUnit(
  before: ThreadCpu,
  after: ThreadCpu,
  units: number,
): Array<{ role: string; usPerUnit: number; voluntaryPerUnit: number; involuntaryPerUnit: number }> | null {
  if (after.size === 0 || units <= 0) return null;
  const rows = [...after].map(([role, a]) => {
    const b = before.get(role) ?? { ticks: 0, voluntarySwitches: 0, involuntarySwitches: 0 };
    return {
      role,
      usPerUnit: ((a.ticks - b.ticks) * 10_000) / units, // USER_HZ is 100: a tick is 10 ms
      voluntaryPerUnit: (a.voluntarySwitches - b.voluntarySwitches) / units,
      involuntaryPerUnit: (a.involuntarySwitches - b.involuntarySwitches) / units,
    };
  });
  return rows.filter((r) => r.usPerUnit > 0).sort((x, y) => y.usPerUnit - x.usPerUnit);
}

function add(out: ThreadCpu, pid: number, root: boolean): void {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const role = root && tid === String(pid) ? 'main' : name;
      const acc = out.get(role) ?? { ticks: 0, voluntarySwitches: 0, involuntarySwitches: 0 };
      acc.ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
      acc.voluntarySwitches += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      acc.involuntarySwitches += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      out.set(role, acc);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  for (const child of childPids(pid)) add(out, child, false);
}

/** CPU seconds (user + system) of `pid` and its child processes (Hearth's managed HAProxy front), null off Linux. */
export function processCpuSeconds(pid: number): number | null {
  const ticks = processTicks(pid);
  return ticks === null ? null : ticks / 100; // USER_HZ is 100 on Linux
}

function processTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = Number(fields[11]) + Number(fields[12]); // utime, stime (of every thread, ended ones too)
    return childPids(pid).reduce((sum, child) => sum + (processTicks(child) ?? 0), own);
  } catch {
    return null;
  }
}

/** The child processes of `pid` (empty when there are none or /proc cannot tell). */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter((x) => x !== '')
      .map(Number);
  } catch {
    return [];
  }
}
