import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of a server process by thread role, from /proc (Linux; empty elsewhere): where the microseconds of a
 * token go between the threads that share the cores. Per thread, from `schedstat` (nanoseconds): the time it ran, and
 * the time it waited on a run queue, ready but with every core taken (on 2 cores: a compute thread waiting while the
 * HTTP thread or the front ran, the cores' contention the step pays for). A role is the thread's name (`comm`): Hearth names its loop
 * thread `hearth-loop`, its persistent ggml compute threads `hearth-compute` and its sampling pool `hearth-sample`;
 * the process's first thread is `main` (Hearth's HTTP and JavaScript thread, llama-server's HTTP thread); child
 * processes (Hearth's managed HAProxy front) count under their own name. Unnamed threads of one name add up (Node's
 * worker threads are all `node`; llama-server's compute threads all `llama-server`).
 */
export type ThreadCpu = Map<string, ThreadCounters>;

interface ThreadCounters {
  runNs: number;
  waitNs: number;
  voluntarySwitches: number;
  involuntarySwitches: number;
}

/** One role's figures between two snapshots, per unit (token). */
export interface RoleCpu {
  role: string;
  /** Microseconds run on a core. */
  usPerUnit: number;
  /** Microseconds ready to run but waiting for a core. */
  waitUsPerUnit: number;
  voluntaryPerUnit: number;
  involuntaryPerUnit: number;
}

/** A snapshot of every thread's CPU ticks and context switches, by role. */
export function threadCpu(pid: number): ThreadCpu {
  const out: ThreadCpu = new Map();
  add(out, pid, true);
  return out;
}

/** CPU microseconds per unit (token) by role between two snapshots, largest first; `null` when /proc is absent. */
export function cpuPerUnit(before: ThreadCpu, after: ThreadCpu, units: number): RoleCpu[] | null {
  if (after.size === 0 || units <= 0) return null;
  const rows = [...after].map(([role, a]) => {
    const b = before.get(role) ?? { runNs: 0, waitNs: 0, voluntarySwitches: 0, involuntarySwitches: 0 };
    return {
      role,
      usPerUnit: (a.runNs - b.runNs) / 1000 / units,
      waitUsPerUnit: (a.waitNs - b.waitNs) / 1000 / units,
      voluntaryPerUnit: (a.voluntarySwitches - b.voluntarySwitches) / units,
      involuntaryPerUnit: (a.involuntarySwitches - b.involuntarySwitches) / units,
    };
  });
  return rows.filter((r) => r.usPerUnit >= 0.05).sort((x, y) => y.usPerUnit - x.usPerUnit);
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
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trimEnd();
      const [runNs, waitNs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const role = root && tid === String(pid) ? 'main' : name;
      const acc = out.get(role) ?? { runNs: 0, waitNs: 0, voluntarySwitches: 0, involuntarySwitches: 0 };
      acc.runNs += runNs ?? 0;
      acc.waitNs += waitNs ?? 0;
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
