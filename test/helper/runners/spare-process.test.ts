import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../../../src/platform/clock.js';
import { appCgroupDir, cgroupPids, findCgroupHome, removeCgroupHome, type CgroupHome } from '../../../src/helper/runners/app-cgroup.js';
import { createProcessRunner } from '../../../src/helper/runners/process-runner.js';
import type { AppTarget, StartSpec } from '../../../src/helper/runners/runner.js';
import type { ProcIdentity } from '../../../src/platform/proc-identity.js';
import { IS_ROOT } from '../../helpers/host.js';
import { skipUnlessCI } from '../../helpers/skip.js';

// The app's spare process (src/helper/runners/spare-process.ts, issue 32 row 4): with app
// cgroups, a start leaves the app's next process parked in its cgroup, an idle /bin/sh in `/`;
// the next identical start (a respawn) runs the app in it, without moving the helper into the
// cgroup on the way; any other start, and a stop, end it; it runs nothing without its go.

const keepAlive = setInterval(() => {}, 1000);
after(() => clearInterval(keepAlive));

function cgroupHome(t: { after(fn: () => void): void }): CgroupHome | null {
  // The folder only names the cgroup home (its hash); removed with it.
  const prefix = mkdtempSync(path.join(os.tmpdir(), 'steward-spare-home-'));
  t.after(() => rmSync(prefix, { recursive: true, force: true }));
  const home = findCgroupHome(prefix);
  if (home) t.after(() => removeCgroupHome(home));
  return home;
}

function makeSpec(version = '1.0.0'): StartSpec & { base: string } {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-spare-'));
  chmodSync(base, 0o755);
  const cwd = path.join(base, 'versions', version);
  mkdirSync(cwd, { recursive: true, mode: 0o755 });
  return {
    base,
    app: 'web',
    version,
    cwd,
    // The app: `sleep` with a marker, so its command line tells it apart after the exec.
    command: ['sleep', `86${randomBytes(3).readUIntBE(0, 3)}`],
    env: {},
    runAs: null,
    logFile: path.join(base, 'log', 'web.log'),
    stateDir: path.join(base, 'lib', 'web'),
    instance: randomBytes(16).toString('hex'),
  };
}

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
const target = (spec: StartSpec, identity: ProcIdentity): AppTarget => ({ app: spec.app, process: identity, instance: spec.instance, uid: process.getuid?.() as number });

// The one process in the app's cgroup that is not `main`: the spare.
async function spareOf(home: CgroupHome, main: number): Promise<number> {
  for (let i = 0; i < 250; i++) {
    const others = cgroupPids(appCgroupDir(home, 'web')).filter((p) => p !== main);
    if (others.length === 1) return others[0] as number;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no single spare in the cgroup: ${cgroupPids(appCgroupDir(home, 'web'))}`);
}

test('a respawn runs the app in its spare: same cgroup, the release folder, the app command, and a new spare parked after it', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'app cgroups need root');
  const home = cgroupHome(t);
  if (!home) return skipUnlessCI(t, 'no app cgroups here (they need root, no systemd as PID 1 and a writable cgroup2 mount)');
  const r = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups: home });
  const spec = makeSpec();
  t.after(() => rmSync(spec.base, { recursive: true, force: true }));
  const first = await r.start(spec);
  const spare = await spareOf(home, first.identity.pid);
  assert.equal(cmdline(spare)[0], '/bin/sh');
  assert.ok(cmdline(spare).includes('steward-spare'), cmdline(spare).join(' '));
  assert.equal(readlinkSync(`/proc/${spare}/cwd`), '/', 'a parked spare is in /, not in the release folder');
  assert.deepEqual(cmdline(first.identity.pid), spec.command);

  process.kill(first.identity.pid, 'SIGKILL');
  await first.exited;
  // The spare outlived the end of the process before (it is no leftover of it).
  assert.ok(cgroupPids(appCgroupDir(home, 'web')).includes(spare), 'the spare is still parked');
  const second = await r.start(spec);
  assert.equal(second.identity.pid, spare, 'the respawn ran in the spare');
  for (let i = 0; i < 100 && cmdline(spare)[0] !== 'sleep'; i++) await new Promise((res) => setTimeout(res, 10));
  assert.deepEqual(cmdline(spare), spec.command, 'the spare exec\'d the app');
  assert.equal(readlinkSync(`/proc/${spare}/cwd`), spec.cwd);
  const env = readFileSync(`/proc/${spare}/environ`, 'utf8');
  assert.match(env, new RegExp(`STEWARD_INSTANCE=${spec.instance}`));
  const next = await spareOf(home, spare);
  assert.notEqual(next, spare, 'a new spare was parked for the respawn after');

  await r.stop(target(spec, second.identity), { timeoutMs: 200 });
  assert.deepEqual(cgroupPids(appCgroupDir(home, 'web')), [], 'a stop ends the app and its spare');
});

test('a start of another version does not use the spare, and ends it', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'app cgroups need root');
  const home = cgroupHome(t);
  if (!home) return skipUnlessCI(t, 'no app cgroups here (they need root, no systemd as PID 1 and a writable cgroup2 mount)');
  const r = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups: home });
  const one = makeSpec('1.0.0');
  const two = { ...makeSpec('2.0.0'), instance: one.instance };
  t.after(() => [one, two].forEach((s) => rmSync(s.base, { recursive: true, force: true })));
  const first = await r.start(one);
  const spare = await spareOf(home, first.identity.pid);
  await r.stop(target(one, first.identity), { timeoutMs: 200 });
  const other = await r.start(two);
  assert.notEqual(other.identity.pid, spare);
  assert.deepEqual(cmdline(other.identity.pid), two.command);
  const pids = cgroupPids(appCgroupDir(home, 'web'));
  assert.ok(!pids.includes(spare), `the old version's spare is gone: ${pids}`);
  await r.stop(target(two, other.identity), { timeoutMs: 200 });
});

test('a spare whose go never comes runs nothing: the end of its pipe ends it', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'app cgroups need root');
  const home = cgroupHome(t);
  if (!home) return skipUnlessCI(t, 'no app cgroups here (they need root, no systemd as PID 1 and a writable cgroup2 mount)');
  // A helper of its own in a child process, SIGKILLed once the app and its spare run: the spare's
  // stdin is a pipe only that helper held.
  const spec = makeSpec();
  t.after(() => rmSync(spec.base, { recursive: true, force: true }));
  const { spawn } = await import('node:child_process');
  const script = `
    const { createProcessRunner } = await import(${JSON.stringify(new URL('../../../src/helper/runners/process-runner.js', import.meta.url).href)});
    const { systemClock } = await import(${JSON.stringify(new URL('../../../src/platform/clock.js', import.meta.url).href)});
    const r = createProcessRunner({ clock: systemClock, isRoot: true, cgroups: ${JSON.stringify(home)} });
    const p = await r.start(${JSON.stringify(spec)});
    console.log(p.identity.pid);
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const main = Number(await new Promise<string>((resolve) => child.stdout.once('data', (d) => resolve(String(d).trim()))));
  const spare = await spareOf(home, main);
  child.kill('SIGKILL');
  for (let i = 0; i < 200 && cgroupPids(appCgroupDir(home, 'web')).includes(spare); i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(cgroupPids(appCgroupDir(home, 'web')), [main], 'the spare exited without running anything; the app runs on');
  process.kill(main, 'SIGKILL');
});

test('a spare no start used within its idle time is ended alone: a process another runner started in the cgroup runs on', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'app cgroups need root');
  const home = cgroupHome(t);
  if (!home) return skipUnlessCI(t, 'no app cgroups here (they need root, no systemd as PID 1 and a writable cgroup2 mount)');
  const r = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups: home, spareIdleMs: 300 });
  const spec = makeSpec();
  t.after(() => rmSync(spec.base, { recursive: true, force: true }));
  const first = await r.start(spec);
  const spare = await spareOf(home, first.identity.pid);
  process.kill(first.identity.pid, 'SIGKILL');
  await first.exited;
  // A later helper of the same host (another runner) starts the app meanwhile, in the same cgroup.
  const other = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups: home });
  const next = await other.start({ ...spec, command: ['sleep', `87${randomBytes(3).readUIntBE(0, 3)}`] });
  for (let i = 0; i < 100 && cgroupPids(appCgroupDir(home, 'web')).includes(spare); i++) await new Promise((res) => setTimeout(res, 20));
  const left = cgroupPids(appCgroupDir(home, 'web'));
  assert.ok(!left.includes(spare), `the idle spare was ended: ${left}`);
  assert.ok(left.includes(next.identity.pid), 'the other runner\'s process runs on');
  await other.stop(target(spec, next.identity), { timeoutMs: 200 });
  for (let i = 0; i < 50 && existsSync(appCgroupDir(home, 'web')); i++) await new Promise((res) => setTimeout(res, 20));
  assert.equal(existsSync(appCgroupDir(home, 'web')), false, 'the cgroup went once empty');
});
