import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statfsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { formatMemorySize } from '../../core/memory-size.js';
import { logger } from '../../platform/log.js';
import { appCgroupDir, type CgroupHome } from './app-cgroup.js';

const debug = logger('helper:runner');

// apps.<app>.memoryMax for the detached runner (docs/design.md §17 "Memory"): the app's memory
// cgroup holds the limit, and its OOM-kill count tells an exit by the OOM killer from any other.
// - cgroup v2 (production hosts): the app's own cgroup (app-cgroup.ts) with the memory
//   controller enabled from the mount down (`+memory` in each cgroup.subtree_control) and
//   `memory.max`; kills are `oom_kill` in `memory.events`.
// - a v1 memory controller (hybrid hosts, whose cgroup2 mount has no memory controller): a
//   cgroup of the app's in the v1 memory hierarchy, named as its v2 one
//   (<mount>/steward[/<hash>.prefix]/<app>), with `memory.limit_in_bytes`; the app is born in it
//   as in its v2 cgroup, and kills are `oom_kill` in `memory.oom_control`.

const CGROUP_SUPER_MAGIC = 0x27e0eb;
const V1_MOUNT = '/sys/fs/cgroup/memory';

// Where the apps' memory cgroups are, or (a string) why there are none here.
export type MemoryHome = { kind: 'v2'; home: CgroupHome } | { kind: 'v1'; mount: string; dir: string };

// The memory cgroup home of the host with root prefix `rootPrefix`, whose apps' v2 cgroups are
// `cgroups` (findCgroupHome), or why it has none.
export function findMemoryHome(rootPrefix: string, cgroups: CgroupHome | null): MemoryHome | string {
  if (process.getuid?.() !== 0) return 'the helper is not root';
  if (existsSync('/run/systemd/system')) return 'systemd is PID 1 and owns the cgroup tree (run apps as units: supervisor.processRunner "auto")';
  if (cgroups && controllersOf(cgroups.mount).includes('memory')) return { kind: 'v2', home: cgroups };
  if (!isV1Memory(V1_MOUNT)) {
    return cgroups ? `the cgroup2 mount ${cgroups.mount} has no memory controller, and there is no v1 one at ${V1_MOUNT}` : 'no writable cgroup2 mount and no v1 memory controller';
  }
  const top = path.join(V1_MOUNT, 'steward');
  try {
    mkdirSync(top, { mode: 0o755 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return `cannot make ${top}: ${(err as Error).message}`;
  }
  const dir = rootPrefix === '' ? top : path.join(top, `${createHash('sha256').update(rootPrefix).digest('hex').slice(0, 16)}.prefix`);
  return { kind: 'v1', mount: V1_MOUNT, dir };
}

function isV1Memory(mount: string): boolean {
  try {
    return statfsSync(mount).type === CGROUP_SUPER_MAGIC && existsSync(path.join(mount, 'memory.limit_in_bytes'));
  } catch {
    return false;
  }
}

function controllersOf(dir: string): string[] {
  try {
    return readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

// The memory cgroup of one start of an app: where its limit is, what its OOM-kill count was
// before the spawn, and how to spawn inside it.
export interface AppMemory {
  kind: 'v2' | 'v1';
  dir: string;
  // Spawns with `spawn` inside the app's v1 memory cgroup (the child is born in it); on v2 it
  // only calls `spawn` (the app's own cgroup, which the runner enters, holds the limit).
  spawnInside<T>(spawn: () => T): T;
  // Whether an exit with `signal` was the OOM killer's: SIGKILL, and the cgroup's OOM-kill count
  // went up since the spawn. Synchronous: called as the exit is heard, before the cgroup goes.
  killedByOom(signal: string | null): boolean;
}

// Sets the app's memory cgroup up for a start with limit `memoryMax` (bytes; undefined: none),
// and returns it; null when the app has no memory cgroup to watch (no limit, and on v2 no memory
// controller enabled for it by an earlier start). `home` a string (no memory cgroup here) and a
// limit: refused, CONFIG_INVALID, for the SRE who set a limit to protect the host must not get
// an app running without it (docs/design.md §17).
export function prepareAppMemory(home: MemoryHome | string, app: string, memoryMax: number | undefined, what: string): AppMemory | null {
  if (typeof home === 'string') {
    if (memoryMax === undefined) return null;
    throw new StewardError('CONFIG_INVALID', `cannot start ${what}: apps.${app}.memoryMax is ${formatMemorySize(memoryMax)} but the helper has no memory cgroup for it here (${home}); remove memoryMax or give the helper one`);
  }
  try {
    return home.kind === 'v2' ? prepareV2(home.home, app, memoryMax) : prepareV1(home, app, memoryMax);
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw new StewardError('CONFIG_INVALID', `cannot start ${what}: cannot set its memory limit apps.${app}.memoryMax: ${(err as Error).message}`, { cause: err });
  }
}

function prepareV2(home: CgroupHome, app: string, memoryMax: number | undefined): AppMemory | null {
  const dir = appCgroupDir(home, app);
  if (memoryMax === undefined) {
    // A limit taken out of the config is taken off at the next start; a cgroup that never had
    // the controller has nothing to take off.
    if (!existsSync(path.join(dir, 'memory.max'))) return null;
    writeFileSync(path.join(dir, 'memory.max'), 'max');
  } else {
    enableMemoryDown(home.mount, dir);
    writeFileSync(path.join(dir, 'memory.max'), String(memoryMax));
  }
  const file = path.join(dir, 'memory.events');
  return { kind: 'v2', dir, spawnInside: (spawn) => spawn(), killedByOom: oomCheck(file) };
}

// Enables the memory controller in every cgroup from `mount` down to `dir`'s parent, and makes
// `dir`. Why each level: a controller is available in a cgroup only when its parent lists it
// in cgroup.subtree_control. The folders between hold no process, which the kernel requires.
function enableMemoryDown(mount: string, dir: string): void {
  const parts = path.relative(mount, dir).split(path.sep);
  let at = mount;
  for (const part of parts) {
    const control = path.join(at, 'cgroup.subtree_control');
    if (!readFileSync(control, 'utf8').trim().split(/\s+/).includes('memory')) writeFileSync(control, '+memory');
    at = path.join(at, part);
    mkdirSync(at, { recursive: true, mode: 0o755 });
  }
}

function prepareV1(home: { mount: string; dir: string }, app: string, memoryMax: number | undefined): AppMemory | null {
  // No limit: the app is born in no memory cgroup of steward's (the one of the helper's parent
  // it inherits), as it was before limits existed.
  if (memoryMax === undefined) return null;
  const dir = path.join(home.dir, app);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(memoryMax));
  return { kind: 'v1', dir, spawnInside: (spawn) => spawnInV1(home.mount, dir, spawn), killedByOom: oomCheck(path.join(dir, 'memory.oom_control')) };
}

// The OOM-kill count of `file` now, and a check of it later.
function oomCheck(file: string): (signal: string | null) => boolean {
  const before = readOomKills(file);
  return (signal) => {
    if (signal !== 'SIGKILL') return false;
    const after = readOomKills(file);
    return before !== null && after !== null && after > before;
  };
}

// The `oom_kill N` count of a memory.events (v2) or memory.oom_control (v1) file; null when the
// file cannot be read or names none.
export function readOomKills(file: string): number | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  return parseOomKills(text);
}

export function parseOomKills(text: string): number | null {
  const m = /^oom_kill (\d+)$/m.exec(text);
  return m ? Number(m[1]) : null;
}

// Spawns inside the v1 memory cgroup `dir`: the helper moves in, spawns (the child is forked
// inside, before any code of the app runs, so none of its children can be born outside), and
// moves back at once. All synchronous: no other code of the helper runs while it is in there.
function spawnInV1<T>(mount: string, dir: string, spawn: () => T): T {
  const own = ownV1MemoryCgroup(mount);
  if (own === null) throw new StewardError('CONFIG_INVALID', `cannot start the app of ${dir}: the helper is in no v1 memory cgroup`);
  try {
    writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
  } catch (err) {
    throw new StewardError('CONFIG_INVALID', `cannot start the app of ${dir}: cannot enter its memory cgroup: ${(err as Error).message}`, { cause: err });
  }
  try {
    return spawn();
  } finally {
    try {
      // Why at once: the helper must never stay under an app's limit.
      writeFileSync(path.join(own, 'cgroup.procs'), String(process.pid));
    } catch (err) {
      debug('the helper could not move back to its memory cgroup %s: %s', own, (err as Error).message);
    }
  }
}

// This process's cgroup in the v1 memory hierarchy, from its "N:memory:/path" line (the
// controllers of a line may be a list: "4:memory,swap:/x").
function ownV1MemoryCgroup(mount: string): string | null {
  let text: string;
  try {
    text = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (m && (m[1] ?? '').split(',').includes('memory')) return path.join(mount, m[2] ?? '/');
  }
  return null;
}

// Removes the app's empty v1 memory cgroup (and a prefixed host's home once empty); one that
// still holds a process stays. On v2 the app's cgroup is the one app-cgroup.ts removes. Why:
// cgroups left by every stop would pile up in the machine's hierarchy.
export function removeAppMemory(home: MemoryHome | string, app: string): void {
  if (typeof home === 'string' || home.kind !== 'v1') return;
  for (const d of [path.join(home.dir, app), ...(home.dir.endsWith('.prefix') ? [home.dir] : [])]) {
    try {
      rmdirSync(d);
    } catch {
      return;
    }
  }
}

// Removes a prefixed host's empty v1 memory cgroups (a test host's cleanup, whose apps were
// killed without a stop); a cgroup that still holds a process stays.
export function removeMemoryHome(home: MemoryHome | string): void {
  if (typeof home === 'string' || home.kind !== 'v1' || !home.dir.endsWith('.prefix')) return;
  let apps: string[];
  try {
    apps = readdirSync(home.dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return;
  }
  for (const app of apps) removeAppMemory(home, app);
  try {
    rmdirSync(home.dir);
  } catch {
    // not empty, or gone
  }
}
