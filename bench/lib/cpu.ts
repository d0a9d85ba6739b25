import fs from 'node:fs';

/** Clock ticks per second of /proc's utime/stime (USER_HZ: 100 on Linux for all common architectures). */
const CLK_TCK = 100;

export interface ThreadCpu {
  tid: number;
  name: string;
  seconds: number;
}

/** CPU seconds (user + system) used so far by each thread of `pid`, from /proc/<pid>/task/<tid>/stat. Empty off Linux. */
export function threadCpu(pid: number): ThreadCpu[] {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: ThreadCpu[] = [];
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const open = stat.indexOf('(');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
      out.push({
        tid: Number(tid),
        name: stat.slice(open + 1, close),
        seconds: (Number(fields[11]) + Number(fields[12])) / CLK_TCK,
      });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** Per-thread CPU seconds used between two snapshots, busiest first (main thread: tid === pid). */
export function cpuDelta(before: ThreadCpu[], after: ThreadCpu[], pid: number): Array<ThreadCpu & { main: boolean }> {
  const base = new Map(before.map((t) => [t.tid, t.seconds]));
  return after
    .map((t) => ({ ...t, seconds: t.seconds - (base.get(t.tid) ?? 0), main: t.tid === pid }))
    .filter((t) => t.seconds > 0)
    .sort((a, b) => b.seconds - a.seconds);
}
