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

// Makes `name` in every writable hierarchy and returns the folders made; [] when none could be
// (the container then shares its parent's cgroup, as before).
export async function makeContainerCgroups(name: string): Promise<string[]> {
  const made: string[] = [];
  for (const base of HIERARCHIES) {
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

// The shell script that moves the shell into `dirs`, then execs its arguments. A move the
// kernel refuses is said on stderr (the boot console) and the container boots where it is.
export function enterCgroupsScript(dirs: string[]): string {
  return dirs.map((d) => `{ echo $$ > '${d}/cgroup.procs'; } 2>/dev/null || echo 'cannot enter the cgroup ${d}' >&2; `).join('') + 'exec "$@"';
}

// Removes the folders once the container is gone, deepest first; a cgroup with a process left
// cannot be removed, so this retries a few times while the last ones are reaped.
export async function removeContainerCgroups(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let attempt = 0; ; attempt++) {
      try {
        await removeDepthFirst(dir);
        break;
      } catch (err) {
        if (attempt >= 20) {
          console.log(`could not remove the test cgroup ${dir}: ${(err as Error).message}`);
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

async function removeDepthFirst(dir: string): Promise<void> {
  let entries;
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const e of entries) if (e.isDirectory()) await removeDepthFirst(path.join(dir, e.name));
  // rmdir, not rm -r: a cgroup folder's files are not removable, the kernel drops them with it.
  await fsp.rmdir(dir);
}
