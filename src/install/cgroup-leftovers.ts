import { promises as fsp } from 'node:fs';
import path from 'node:path';

// With the `detached` process runner, apps are children of the helper that KillMode=process
// leaves in the helper unit's cgroup when the helper stops: once the helper is stopped, every
// process still in that cgroup is such an app.

// Where a unit's cgroup (`ControlGroup=` of `systemctl show`, e.g. /system.slice/x.service) is
// mounted: cgroup v2 (unified), or the hybrid and legacy layouts' unified and name=systemd
// hierarchies, which also hold every process of the unit.
const CGROUP_MOUNTS = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified', '/sys/fs/cgroup/systemd'];

// The folder of `cgroup` under the first mount that has it, or null.
export async function cgroupDir(cgroup: string): Promise<string | null> {
  for (const mount of CGROUP_MOUNTS) {
    const dir = path.join(mount, cgroup);
    if (await fsp.access(path.join(dir, 'cgroup.procs')).then(() => true, () => false)) return dir;
  }
  return null;
}

// The pids in a cgroup (and its sub-cgroups), or [] when it does not exist.
async function cgroupPids(dir: string): Promise<number[]> {
  const out: number[] = [];
  const text = await fsp.readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const line of text.split('\n')) if (/^\d+$/.test(line)) out.push(Number(line));
  const subs = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const d of subs) if (d.isDirectory()) out.push(...(await cgroupPids(path.join(dir, d.name))));
  return out;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already (ESRCH): nothing to stop
  }
}

// Stops every process left in `dir` (a stopped unit's cgroup): SIGTERM, then SIGKILL after
// `graceMs`. Returns the pids it found. Only for a unit that is stopped: its cgroup then holds
// nothing but leftovers, and systemd never puts an unrelated process there.
export async function stopCgroupLeftovers(dir: string, graceMs = 10_000): Promise<number[]> {
  const found = await cgroupPids(dir);
  if (found.length === 0) return [];
  for (const pid of found) signal(pid, 'SIGTERM');
  const until = Date.now() + graceMs;
  let left = await cgroupPids(dir);
  while (left.length && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    left = await cgroupPids(dir);
  }
  // Why SIGKILL: purge is about to delete the release trees these run from.
  for (const pid of left) signal(pid, 'SIGKILL');
  return found;
}
