// CPU and memory of an app's processes, read from /proc (docs/design.md §19): the main process and
// every descendant, CPU as utime+stime (and cutime+cstime, the children it reaped) in USER_HZ ticks,
// RSS as VmRSS. /proc rather than the app's cgroup: a process app has a cgroup only when it has
// memoryMax, and systemd removes a unit's cgroup at each restart, so neither counts across restarts
// either. CPU across restarts is carried in memory by CpuCarry (a helper restart loses the carry:
// a decrease, which consumers read as a reset).
import { promises as fsp } from 'node:fs';
import path from 'node:path';

// USER_HZ: 100 on every Linux architecture steward runs on (the kernel's ABI, not CONFIG_HZ).
const USER_HZ = 100;
// A host with more processes than this is not scanned further for descendants.
const MAX_PROCESSES = 65_536;

export interface ProcessUsage {
  cpuSeconds: number;
  rssBytes: number;
}

interface ProcStat {
  ppid: number;
  cpuTicks: number;
}

// The /proc/<pid>/stat fields steward reads; null when it does not parse. The command name (field 2)
// may hold spaces and parentheses: the fields are counted after its last ')'.
export function parseProcStat(text: string): ProcStat | null {
  const end = text.lastIndexOf(')');
  if (end === -1) return null;
  const f = text.slice(end + 2).trim().split(' ');
  // After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
  const num = (field: number) => Number(f[field - 3]);
  const ppid = num(4);
  const ticks = num(14) + num(15) + num(16) + num(17);
  if (!Number.isInteger(ppid) || !Number.isFinite(ticks) || ticks < 0) return null;
  return { ppid, cpuTicks: ticks };
}

// VmRSS of a /proc/<pid>/status in bytes, 0 when absent (a zombie, a kernel thread).
export function parseVmRss(text: string): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

// The usage of `pid` and its descendants now, or null when `pid` is gone.
export async function readProcessTreeUsage(pid: number, procRoot = '/proc'): Promise<ProcessUsage | null> {
  return treeUsage(await readProcessTable(procRoot), pid, procRoot);
}

// A reader of process trees that scans /proc once, at its first use, for every app of one status
// answer (a status names each app; a scan per app would read every process's stat file again).
export function processTreeReader(procRoot = '/proc'): (pid: number) => Promise<ProcessUsage | null> {
  let table: Promise<ProcessTable> | null = null;
  return async (pid) => treeUsage(await (table ??= readProcessTable(procRoot)), pid, procRoot);
}

type ProcessTable = Map<number, ProcStat>;

async function readProcessTable(procRoot: string): Promise<ProcessTable> {
  const entries = (await fsp.readdir(procRoot).catch(() => [] as string[])).filter((e) => /^\d+$/.test(e)).slice(0, MAX_PROCESSES);
  const table: ProcessTable = new Map();
  for (const e of entries) {
    const s = await readStat(procRoot, Number(e));
    if (s) table.set(Number(e), s);
  }
  return table;
}

async function treeUsage(table: ProcessTable, pid: number, procRoot: string): Promise<ProcessUsage | null> {
  if (!table.has(pid)) return null;
  const children = new Map<number, number[]>();
  for (const [p, s] of table) {
    const list = children.get(s.ppid) ?? [];
    list.push(p);
    children.set(s.ppid, list);
  }
  let ticks = 0;
  let rss = 0;
  const seen = new Set<number>();
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.pop() as number;
    if (seen.has(p)) continue;
    seen.add(p);
    ticks += table.get(p)?.cpuTicks ?? 0;
    rss += parseVmRss(await fsp.readFile(path.join(procRoot, String(p), 'status'), 'utf8').catch(() => ''));
    queue.push(...(children.get(p) ?? []));
  }
  return { cpuSeconds: ticks / USER_HZ, rssBytes: rss };
}

async function readStat(procRoot: string, pid: number): Promise<ProcStat | null> {
  const text = await fsp.readFile(path.join(procRoot, String(pid), 'stat'), 'utf8').catch(() => null);
  return text === null ? null : parseProcStat(text);
}

// CPU seconds of an app since `since`, across its restarts: the last reading of each process it
// had is kept when a new pid appears. Contract: `cpuSince` is called with the app's current pid
// (or null when none runs) and the `since` of its counts; a new `since` starts at 0 again.
export class CpuCarry {
  private readonly apps = new Map<string, { since: number; pid: number | null; last: number; carried: number }>();

  cpuSince(app: string, since: number, pid: number | null, reading: number | null): number {
    let a = this.apps.get(app);
    if (!a || a.since !== since) {
      a = { since, pid, last: 0, carried: 0 };
      this.apps.set(app, a);
    }
    if (a.pid !== pid) {
      a.carried += a.last;
      a.last = 0;
      a.pid = pid;
    }
    if (reading !== null && pid !== null) a.last = Math.max(a.last, reading);
    return a.carried + a.last;
  }
}
