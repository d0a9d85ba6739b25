import fs from 'node:fs';
import os from 'node:os';

/** Where a benchmark ran: printed above every table in bench/RESULTS.md and stored in the JSON. */
export interface MachineInfo {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
  /** 1-minute load average when the run started: > cores means other work shared the machine. */
  loadAverage1m: number;
}

function cpuModel(): string {
  const fromOs = os.cpus()[0]?.model?.trim();
  if (fromOs) return fromOs;
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    return m?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function describeMachine(): MachineInfo {
  return {
    date: new Date().toISOString(),
    cpu: cpuModel(),
    cores: os.availableParallelism(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverage1m: Math.round(os.loadavg()[0]! * 100) / 100,
  };
}

export function machineLine(m: MachineInfo): string {
  return `${m.date} · ${m.cpu} · ${m.cores} cores · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · load avg (1 min) at start ${m.loadAverage1m}`;
}
