import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StewardError } from '../../../src/core/errors.js';
import { systemClock } from '../../../src/platform/clock.js';
import { isSameProcessAlive } from '../../../src/platform/proc-identity.js';
import { appCgroupDir, findCgroupHome, removeCgroupHome } from '../../../src/helper/runners/app-cgroup.js';
import { findMemoryHome, parseOomKills, prepareAppMemory, removeMemoryHome, type MemoryHome } from '../../../src/helper/runners/memory-cgroup.js';
import { createProcessRunner } from '../../../src/helper/runners/process-runner.js';
import type { AppRunner, StartSpec } from '../../../src/helper/runners/runner.js';
import { IS_ROOT } from '../../helpers/host.js';
import { readableCopy } from '../../helpers/readable-copy.js';
import { skipUnlessCI } from '../../helpers/skip.js';

// apps.<app>.memoryMax under the detached runner (docs/design.md §17 "Memory"): the app's memory
// cgroup (v2 memory.max, or a v1 memory.limit_in_bytes on a hybrid host) holds the limit, and an
// exit by the OOM killer is told from any other SIGKILL by the cgroup's OOM-kill count.

const fixtures = readableCopy(['test/fixtures/apps']);
after(() => fixtures.cleanup());
const APPS = fixtures.path('test/fixtures/apps');
const MiB = 1024 * 1024;
// Apps are unref()'d children: a timer keeps the loop up, as the helper's server does.
const keepAlive = setInterval(() => {}, 1000);
after(() => clearInterval(keepAlive));

interface Setup {
  runner: AppRunner;
  memory: MemoryHome;
  // The file that holds the limit of `app`.
  limitFile(app: string): string;
}

// A runner with app cgroups and memory cgroups for a host of its own (a root prefix), or a skip
// where this machine has no memory cgroup for the helper.
function setUp(t: TestContext): Setup | null {
  const prefix = mkdtempSync(path.join(os.tmpdir(), 'steward-memory-home-'));
  t.after(() => rmSync(prefix, { recursive: true, force: true }));
  const cgroups = findCgroupHome(prefix);
  const memory = findMemoryHome(prefix, cgroups);
  t.after(() => {
    if (cgroups) removeCgroupHome(cgroups);
    removeMemoryHome(memory);
  });
  if (typeof memory === 'string') {
    skipUnlessCI(t, `no memory cgroup here: ${memory}`);
    return null;
  }
  console.log(`memory cgroups: v${memory.kind.slice(1)} under ${memory.kind === 'v1' ? memory.dir : memory.home.dir}`);
  const runner = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups, memory });
  const limitFile = (app: string) =>
    memory.kind === 'v1' ? path.join(memory.dir, app, 'memory.limit_in_bytes') : path.join(appCgroupDir(memory.home, app), 'memory.max');
  return { runner, memory, limitFile };
}

function makeSpec(t: TestContext, command: string[], extra: Partial<StartSpec> = {}): StartSpec {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-memory-'));
  chmodSync(base, 0o755);
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const cwd = path.join(base, 'versions', '1.0.0');
  mkdirSync(cwd, { recursive: true, mode: 0o755 });
  return {
    app: 'web',
    version: '1.0.0',
    cwd,
    command,
    env: {},
    runAs: null,
    logFile: path.join(base, 'log', 'web.log'),
    stateDir: path.join(base, 'lib', 'web'),
    instance: randomBytes(16).toString('hex'),
    ...extra,
  };
}

const target = (spec: StartSpec, pid: { pid: number; startTicks: number; bootId: string } | null) => ({
  app: spec.app,
  process: pid,
  instance: spec.instance,
  uid: process.getuid?.() ?? -1,
});

test('an app that grows past its memoryMax is killed by the OOM killer and its exit says OOM', async (t) => {
  const s = setUp(t);
  if (!s) return;
  // The hog stops by itself at 512 MiB (exit 3): a limit not applied fails here, the host unharmed.
  const spec = makeSpec(t, [process.execPath, path.join(APPS, 'memory-hog.mjs'), '512'], { memoryMax: 96 * MiB });
  const started = await s.runner.start(spec);
  t.after(() => s.runner.stop(target(spec, started.identity), { timeoutMs: 1000 }));
  const exit = await started.exited;
  const log = readFileSync(spec.logFile, 'utf8');
  assert.doesNotMatch(log, /survived/, `the limit was not applied: ${log}`);
  assert.deepEqual(exit, { code: null, signal: 'SIGKILL', reason: 'OOM' });
  // What is left there is at most the app's spare, parked for its respawn (spare-process.ts); the
  // stop of the app ends it, and the cgroup goes with it.
  await s.runner.stop(target(spec, started.identity), { timeoutMs: 1000 });
  assert.equal(existsSync(path.dirname(s.limitFile('web'))), false, "the app's memory cgroup is removed once nothing of it runs");
});

test('an app with a memoryMax killed with SIGKILL by someone else is no OOM', async (t) => {
  const s = setUp(t);
  if (!s) return;
  const spec = makeSpec(t, [process.execPath, path.join(APPS, 'hang.mjs')], { memoryMax: 256 * MiB });
  const started = await s.runner.start(spec);
  // Whatever fails below, nothing is left running (a stop of nothing is success).
  t.after(() => s.runner.stop(target(spec, started.identity), { timeoutMs: 1000 }));
  assert.equal(Number(readFileSync(s.limitFile('web'), 'utf8')), 256 * MiB);
  process.kill(started.identity.pid, 'SIGKILL');
  assert.deepEqual(await started.exited, { code: null, signal: 'SIGKILL' });
});

test('a changed memoryMax is the limit of the next start, and the cgroup goes with the stopped app', async (t) => {
  const s = setUp(t);
  if (!s) return;
  const command = [process.execPath, path.join(APPS, 'hang.mjs')];
  for (const limit of [64 * MiB, 200 * MiB]) {
    const spec = makeSpec(t, command, { memoryMax: limit });
    const started = await s.runner.start(spec);
    t.after(() => s.runner.stop(target(spec, started.identity), { timeoutMs: 1000 }));
    assert.equal(Number(readFileSync(s.limitFile('web'), 'utf8')), limit);
    // The app is in the cgroup that holds the limit: every process it forks is born there.
    const procs = readFileSync(path.join(path.dirname(s.limitFile('web')), 'cgroup.procs'), 'utf8').trim().split('\n').map(Number);
    assert.ok(procs.includes(started.identity.pid), `pid ${started.identity.pid} not among ${procs.join(' ')}`);
    assert.ok(!procs.includes(process.pid), 'the helper left the cgroup after the spawn');
    await s.runner.stop(target(spec, started.identity), { timeoutMs: 2000 });
    assert.equal(await isSameProcessAlive(started.identity), false);
    assert.equal(existsSync(path.dirname(s.limitFile('web'))), false, 'the memory cgroup is removed at the stop');
  }
});

test('a start without memoryMax after one with it runs without a limit', async (t) => {
  const s = setUp(t);
  if (!s) return;
  const command = [process.execPath, path.join(APPS, 'hang.mjs')];
  const limited = makeSpec(t, command, { memoryMax: 64 * MiB });
  const first = await s.runner.start(limited);
  t.after(() => s.runner.stop(target(limited, first.identity), { timeoutMs: 1000 }));
  await s.runner.stop(target(limited, first.identity), { timeoutMs: 2000 });
  const free = makeSpec(t, command);
  const second = await s.runner.start(free);
  t.after(() => s.runner.stop(target(free, second.identity), { timeoutMs: 2000 }));
  const limit = existsSync(s.limitFile('web')) ? readFileSync(s.limitFile('web'), 'utf8').trim() : 'none';
  // v2 writes "max"; v1 puts the app in no memory cgroup of steward's.
  assert.ok(limit === 'max' || limit === 'none', `limit after the key was taken out: ${limit}`);
});

test('where the helper has no memory cgroup, an app with a memoryMax is refused its start, and one without starts', async (t) => {
  const runner = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups: null, memory: 'the helper is not root' });
  const command = [process.execPath, path.join(APPS, 'hang.mjs')];
  const spec = makeSpec(t, command, { memoryMax: 512 * MiB });
  await assert.rejects(runner.start(spec), (err: unknown) => {
    assert.ok(err instanceof StewardError);
    assert.equal(err.code, 'CONFIG_INVALID');
    assert.match(err.message, /cannot start web 1\.0\.0: apps\.web\.memoryMax is 512M but the helper has no memory cgroup for it here \(the helper is not root\)/);
    return true;
  });
  assert.equal(existsSync(spec.logFile) ? readFileSync(spec.logFile, 'utf8') : '', '', 'nothing ran');
  const plain = makeSpec(t, command);
  const started = await runner.start(plain);
  t.after(() => runner.stop(target(plain, started.identity), { timeoutMs: 1000 }));
  await runner.stop(target(plain, started.identity), { timeoutMs: 2000 });
});

test('the OOM-kill count is read from memory.events (v2) and memory.oom_control (v1)', () => {
  assert.equal(parseOomKills('low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n'), 2);
  assert.equal(parseOomKills('oom_kill_disable 0\nunder_oom 0\noom_kill 7\n'), 7);
  assert.equal(parseOomKills('oom_kill_disable 0\nunder_oom 0\n'), null);
  assert.equal(parseOomKills(''), null);
});

// The v2 steps on a scratch tree shaped like a cgroup2 mount (this machine's memory controller
// may be v1): the kernel's own behaviour (limits, kills) is what the tests above check.
test('on cgroup v2 the memory controller is enabled from the mount down, the limit is memory.max, and only a SIGKILL with oom_kill up is OOM', (t) => {
  const mount = mkdtempSync(path.join(os.tmpdir(), 'steward-fake-cgroup2-'));
  t.after(() => rmSync(mount, { recursive: true, force: true }));
  const dir = path.join(mount, 'steward', 'abc.prefix');
  mkdirSync(dir, { recursive: true });
  const controls = [mount, path.join(mount, 'steward'), dir].map((d) => path.join(d, 'cgroup.subtree_control'));
  writeFileSync(controls[0]!, 'cpu memory pids\n');
  writeFileSync(controls[1]!, 'pids\n');
  writeFileSync(controls[2]!, '\n');
  const home: MemoryHome = { kind: 'v2', home: { mount, dir } };
  const app = path.join(dir, 'web');
  // No limit, and no memory controller in the app's cgroup yet: nothing to watch.
  assert.equal(prepareAppMemory(home, 'web', undefined, 'web 1.0.0'), null);
  mkdirSync(app);
  writeFileSync(path.join(app, 'memory.events'), 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n');
  const m = prepareAppMemory(home, 'web', 64 * MiB, 'web 1.0.0');
  assert.ok(m);
  assert.deepEqual(controls.map((f) => readFileSync(f, 'utf8').trim()), ['cpu memory pids', '+memory', '+memory'], 'enabled where it was not, left where it was');
  assert.equal(readFileSync(path.join(app, 'memory.max'), 'utf8'), String(64 * MiB));
  assert.equal(m.spawnInside(() => 'spawned'), 'spawned');
  assert.equal(m.killedByOom('SIGKILL'), false, 'no kill counted');
  writeFileSync(path.join(app, 'memory.events'), 'low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n');
  assert.equal(m.killedByOom('SIGTERM'), false, 'the OOM killer sends SIGKILL only');
  assert.equal(m.killedByOom('SIGKILL'), true);
  // The key taken out: the next start lifts the limit and still watches for kills.
  const next = prepareAppMemory(home, 'web', undefined, 'web 1.0.0');
  assert.ok(next);
  assert.equal(readFileSync(path.join(app, 'memory.max'), 'utf8'), 'max');
  assert.equal(next.killedByOom('SIGKILL'), false, 'counted from this start on');
});
