import { existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';

// A cgroup of its own for each test container. systemd-nspawn --keep-unit puts the container in
// `payload/` under nspawn's own cgroup, so two containers started from one cgroup (two test files
// at once, or two sessions on one machine) share every cgroup below it: one container's
// `system.slice/steward-app-web.service` was the other's too, and its cgroup.procs listed the
// other container's app as pid 0 (a process outside the reader's pid namespace).

// The hierarchies a container's systemd uses: the named v1 `systemd` one and the v2 one (hybrid
// layout), or the v2 one alone (unified layout, where /sys/fs/cgroup itself is cgroup2).
const HIERARCHIES = ['/sys/fs/cgroup/systemd', '/sys/fs/cgroup/unified', '/sys/fs/cgroup'];

// The v1 memory hierarchy of a hybrid host, for a container that asks for its own memory cgroup.
export const V1_MEMORY = '/sys/fs/cgroup/memory';

// Makes `name` in every writable hierarchy (and, with `memory`, in the v1 memory one) and returns
// the folders made; [] when none could be (the container then shares its parent's cgroup, as before).
export async function makeContainerCgroups(name: string, opts: { memory?: boolean } = {}): Promise<string[]> {
  const made: string[] = [];
  for (const base of [...HIERARCHIES, ...(opts.memory ? [V1_MEMORY] : [])]) {
    if (!existsSync(path.join(base, 'cgroup.procs'))) continue;
    const dir = path.join(base, name);
    try {
      await fsp.mkdir(dir);
      made.push(dir);
    } catch {
      // A read-only /sys/fs/cgroup (an unprivileged CI container): keep the shared cgroup.
    }
  }
  return made;
}

// Shell commands for a subshell: they move it into `dirs` (what it execs next runs there; `0` is
// the writing process, a subshell's $$ being its parent's). A move the kernel refuses is said on
// stderr (the boot console) and the container boots where it is.
export function enterCgroupsScript(dirs: string[]): string {
  return dirs.map((d) => `{ echo 0 > '${d}/cgroup.procs'; } 2>/dev/null || echo 'cannot enter the cgroup ${d}' >&2\n`).join('');
}

// Shell commands that remove the folders once the container is gone, deepest first (rmdir: a
// cgroup folder's files are not removable, the kernel drops them with it); a cgroup with a process
// left cannot be removed, so they retry for 2 s while the last ones are reaped.
export function removeCgroupsScript(dirs: string[]): string {
  return dirs
    .map((d) => `i=0
while [ -e '${d}' ] && ! find '${d}' -depth -type d -exec rmdir {} + 2>/dev/null; do
  i=$((i + 1)); if [ "$i" -ge 20 ]; then echo 'could not remove the test cgroup ${d}' >&2; break; fi
  sleep 0.1
done
`)
    .join('');
}
