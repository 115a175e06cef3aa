import { promises as fsp } from 'node:fs';
import { versionsDir, type HostPaths } from '../../core/paths.js';
import { readProcIdentity, type ProcIdentity } from '../../platform/proc-identity.js';

// Session leaders whose working folder is inside the app's release trees: processes this
// helper started (it starts every app in its own session, in versions/<ver>), including
// one a crash left running before it could be recorded. Nothing else matches, so nothing
// without a link to this app is ever returned.
export async function findAppProcesses(paths: HostPaths, app: string): Promise<ProcIdentity[]> {
  const root = (await fsp.realpath(versionsDir(paths, app)).catch(() => null)) ?? null;
  if (!root) return [];
  const out: ProcIdentity[] = [];
  for (const name of await fsp.readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const cwd = await fsp.readlink(`/proc/${pid}/cwd`).catch(() => null);
    if (!cwd || !(cwd === root || cwd.startsWith(root + '/'))) continue;
    const stat = await fsp.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is state (field 3); session id is field 6.
    if (fields[0] === 'Z' || Number(fields[3]) !== pid) continue;
    const id = await readProcIdentity(pid);
    if (id) out.push(id);
  }
  return out;
}
