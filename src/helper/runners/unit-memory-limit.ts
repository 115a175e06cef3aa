import { readFileSync } from 'node:fs';
import path from 'node:path';

// apps.<app>.memoryMax under systemd (docs/design.md §17 "Memory"): the unit's MemoryMax=, which
// systemd writes to memory.max (cgroup v2) or memory.limit_in_bytes (a v1 memory controller).
// Where systemd has no memory controller it can write to (a container's read-only hierarchy, say)
// it starts the unit without a limit and says nothing: so the runner reads the limit back from
// the process's own cgroup, and an app whose limit is not there is stopped and refused, as the
// detached runner refuses it (an SRE's limit is never silently dropped).

const CGROUP_ROOT = '/sys/fs/cgroup';

// The memory limit in bytes that holds process `pid`, read from its cgroup: the v1 memory
// controller's memory.limit_in_bytes where it has one, else the v2 memory.max of a unified
// mount. null when neither can be read (no memory controller, or the process is gone).
export function readAppliedMemoryLimit(pid: number, root = CGROUP_ROOT): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return null;
  }
  return readLimitOf(text, root);
}

// The memory limit of the cgroups named by a /proc/<pid>/cgroup text, under `root`.
export function readLimitOf(text: string, root = CGROUP_ROOT): number | null {
  for (const { controllers, cgPath } of parseCgroupLines(text)) {
    if (controllers.includes('memory')) {
      const v = readLimit(path.join(root, 'memory', cgPath, 'memory.limit_in_bytes'));
      if (v !== null) return v;
    }
  }
  const v2 = parseCgroupLines(text).find((l) => l.v2);
  return v2 ? readLimit(path.join(root, v2.cgPath, 'memory.max')) : null;
}

function parseCgroupLines(text: string): Array<{ controllers: string[]; cgPath: string; v2: boolean }> {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    // A path with ".." is outside the reader's cgroup namespace: nothing to read there.
    if (!m || (m[3] ?? '').split('/').includes('..')) continue;
    out.push({ controllers: (m[2] ?? '').split(','), cgPath: m[3] ?? '/', v2: m[1] === '0' && m[2] === '' });
  }
  return out;
}

function readLimit(file: string): number | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
  if (text === 'max') return Number.POSITIVE_INFINITY;
  return /^\d{1,20}$/.test(text) ? Number(text) : null;
}

// Whether a limit read back is the one asked for: the kernel keeps it in whole pages, so it may
// be below by less than a page (64 KiB covers every page size Linux runs with).
export function isLimitApplied(applied: number | null, wanted: number): boolean {
  return applied !== null && applied <= wanted && applied > wanted - 64 * 1024;
}

// Whether the kernel's log says it killed process `pid` for want of memory: "Memory cgroup out of
// memory: Killed process <pid> (<comm>)" (a cgroup's limit) or "Out of memory: Killed process
// <pid> (<comm>)" (the whole host). The systemd runner's fallback on a v1 memory controller,
// where systemd's result for an OOM kill is only "signal". Only the kernel (and root) writes the
// kernel log, so an app cannot forge this line about itself.
export function parseKernelOomKill(text: string, pid: number): boolean {
  for (const m of text.matchAll(/^(?:Memory cgroup out of memory|Out of memory): Killed process (\d+) \(/gm)) {
    if (Number(m[1]) === pid) return true;
  }
  return false;
}
