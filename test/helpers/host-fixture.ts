// One test host with its own teardown: the temp root and its config (host.ts makeHost), the
// helpers started on it, and whatever else a test starts against it (an agent). The teardown
// stops those, kills every process the host's apps left, waits until they are gone, and removes
// the tree, so that no test repeats that order or forgets a step of it.
import { existsSync, readdirSync, readFileSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { isSameProcessAliveSync, type ProcIdentity } from '../../src/platform/proc-identity.js';
import { appCgroupDir, cgroupPids, findCgroupHome } from '../../src/helper/runners/app-cgroup.js';
import { findMemoryHome, removeMemoryHome } from '../../src/helper/runners/memory-cgroup.js';
import { isRunning, processesUnder, registeredDaemons } from './app-processes.js';
import { makeHost, processApp, startHelper, type HelperProcess, type TestHost } from './host.js';

// Where a fixture's teardown goes: a test's context `t` (it runs when that test ends), or
// node:test's `after` called at a file's top level (it runs once the file's tests are done).
export type TeardownScope = { after(fn: () => unknown): void } | ((fn: () => unknown) => void);

export interface HostFixture extends TestHost {
  // Starts steward-helper on this host (host.ts startHelper); the teardown stops it.
  startHelper(env?: Record<string, string>, opts?: Parameters<typeof startHelper>[2]): Promise<HelperProcess>;
  // Runs `stop` at teardown before the helpers stop (an agent, say); the last added runs first.
  stopFirst(stop: () => unknown): void;
}

// How long a helper has to exit on SIGTERM at teardown before it is SIGKILLed, and how long the
// killed processes have to be gone.
const HELPER_STOP_MS = 10_000;
const GONE_MS = 10_000;

// A host in a temp folder whose teardown `scope` runs: stop what stopFirst named (last first),
// stop every helper started through it, kill what its apps left, remove the tree.
export function useHost(scope: TeardownScope, config: Record<string, unknown> = { apps: { web: processApp() } }, opts: { inMemory?: boolean } = {}): HostFixture {
  const host = makeHost(config, opts);
  const helpers: HelperProcess[] = [];
  const first: Array<() => unknown> = [];
  const fixture: HostFixture = {
    ...host,
    async startHelper(env = {}, o = {}) {
      const h = await startHelper(host, env, o);
      helpers.push(h);
      return h;
    },
    stopFirst(stop) {
      first.push(stop);
    },
  };
  const teardown = async () => {
    const errors: unknown[] = [];
    const step = async (fn: () => unknown) => {
      try {
        await fn();
      } catch (err) {
        errors.push(err);
      }
    };
    for (const stop of first.reverse()) await step(stop);
    for (const h of helpers) await step(() => stopHelper(h));
    // Why after the helpers: a helper still running would respawn what is killed here.
    await step(() => killHostProcesses(host));
    await step(() => host.cleanup());
    await step(() => removeMemoryCgroups(host.root));
    if (errors.length > 0) throw errors[0];
  };
  onTeardown(scope, teardown);
  return fixture;
}

// Removes the host's v1 memory cgroups (memory-cgroup.ts), retrying for up to 2 s: a process just
// killed keeps its v1 memory cgroup busy until it is reaped (host.cleanup tried once already).
async function removeMemoryCgroups(root: string): Promise<void> {
  const memory = findMemoryHome(root, findCgroupHome(root));
  if (typeof memory === 'string' || memory.kind !== 'v1') return;
  for (let i = 0; existsSync(memory.dir) && i < 100; i++) {
    removeMemoryHome(memory);
    if (existsSync(memory.dir)) await new Promise((r) => setTimeout(r, 20));
  }
}

// Registers `teardown` with `scope`.
export function onTeardown(scope: TeardownScope, teardown: () => unknown): void {
  if (typeof scope === 'function') scope(teardown);
  else scope.after(teardown);
}

// SIGTERM, then SIGKILL if the helper is still there after HELPER_STOP_MS.
async function stopHelper(h: HelperProcess): Promise<void> {
  const timer = setTimeout(() => void h.kill(), HELPER_STOP_MS);
  try {
    await h.stop();
  } finally {
    clearTimeout(timer);
  }
}

// SIGKILLs everything of the host's apps that may still run, whichever way it outlived its
// helper: each recorded app process (still the one recorded) and its process group, the members
// of each app cgroup (as root without systemd), every process whose working folder is in the
// host's temp folder (a release tree), and the daemons the fixture apps registered
// (test/fixtures/app-releases.ts) that still have the app's state folder; then waits until they
// are gone. Why each is checked first: pids are reused (pid_max may be 32768), and a pid from a
// file may by now be another test's process. Why wait: a cgroup that still holds a process
// cannot be removed, and a process still running from the tree is a leak the next test meets.
async function killHostProcesses(host: TestHost): Promise<void> {
  const pids = new Set<number>();
  for (const name of entries(host.paths.supervisorDir, (d) => d.isFile() && d.name.endsWith('.json'))) {
    const p = recordedProcess(path.join(host.paths.supervisorDir, name));
    if (p && isSameProcessAliveSync(p)) pids.add(p.pid);
  }
  const cgroups = findCgroupHome(host.root);
  if (cgroups) for (const app of entries(cgroups.dir, (d) => d.isDirectory())) for (const pid of cgroupPids(appCgroupDir(cgroups, app))) pids.add(pid);
  for (const pid of await processesUnder(path.dirname(host.root))) pids.add(pid);
  for (const app of entries(host.paths.appStateRoot, (d) => d.isDirectory())) {
    const stateDir = path.join(host.paths.appStateRoot, app);
    for (const d of registeredDaemons(stateDir)) if (d.alive && hasEnv(d.pid, `STATE_DIRECTORY=${stateDir}`)) pids.add(d.pid);
  }
  for (const pid of pids) {
    kill(-pid);
    kill(pid);
  }
  const deadline = Date.now() + GONE_MS;
  for (;;) {
    const left = [...pids].filter(isRunning);
    if (left.length === 0) return;
    if (Date.now() > deadline) throw new Error(`the host's processes ${left.join(', ')} still run ${GONE_MS} ms after SIGKILL`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// The process a run record names, or null.
function recordedProcess(file: string): ProcIdentity | null {
  try {
    const p = JSON.parse(readFileSync(file, 'utf8'))?.process;
    return typeof p?.pid === 'number' && typeof p.startTicks === 'number' && typeof p.bootId === 'string' ? p : null;
  } catch {
    return null;
  }
}

// The environment of a process by name, from its /proc/<pid>/environ file (`file`: one inside a
// container is reached through container-exec.ts pathIn).
export function environOf(file: string): Map<string, string> {
  return new Map(
    readFileSync(file, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

// Whether process `pid` has `entry` (NAME=value) in its environment (false when unreadable).
function hasEnv(pid: number, entry: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(entry);
  } catch {
    return false;
  }
}

// SIGKILL to `pid` (a negative one: its process group), if it is there.
function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone, or no such process group
  }
}

// The names of the entries of `dir` that `keep` keeps; none when `dir` cannot be read.
function entries(dir: string, keep: (d: Dirent) => boolean): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter(keep).map((d) => d.name);
  } catch {
    return [];
  }
}
