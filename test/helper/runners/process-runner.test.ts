import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StewardError } from '../../../src/core/errors.js';
import { systemClock } from '../../../src/platform/clock.js';
import { readBootId, readProcIdentity, type ProcIdentity } from '../../../src/platform/proc-identity.js';
import { lookupUser } from '../../../src/platform/users.js';
import { readProcStat, readProcStatSync } from '../../../src/helper/runners/process-group.js';
import { createProcessRunner } from '../../../src/helper/runners/process-runner.js';
import { findCgroupHome, removeCgroupHome } from '../../../src/helper/runners/app-cgroup.js';
import type { AppTarget, StartSpec } from '../../../src/helper/runners/runner.js';
import { IS_ROOT, REPO } from '../../helpers/host.js';
import { readableCopy } from '../../helpers/readable-copy.js';
import { skipUnlessCI } from '../../helpers/skip.js';

// The fixture apps, from a copy any user can read: one test runs them as nobody.
const fixtures = readableCopy(['test/fixtures/apps']);
after(() => fixtures.cleanup());
const APPS = fixtures.path('test/fixtures/apps');
const runner = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT });
// Apps are unref()'d children: awaiting only `exited` would let this process end, as the
// helper would without its server. A timer keeps the loop up, as the server does.
const keepAlive = setInterval(() => {}, 1000);
after(() => clearInterval(keepAlive));

// A scratch layout readable by any user: app folder, log file and state folder.
function makeSpec(fixture: string, extra: Partial<StartSpec> = {}): StartSpec & { cleanup(): void } {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-runner-'));
  chmodSync(base, 0o755);
  const cwd = path.join(base, 'versions', '1.0.0');
  mkdirSync(cwd, { recursive: true, mode: 0o755 });
  return {
    app: 'web',
    version: '1.0.0',
    cwd,
    command: [process.execPath, path.join(APPS, fixture)],
    env: {},
    runAs: null,
    logFile: path.join(base, 'log', 'web.log'),
    stateDir: path.join(base, 'lib', 'web'),
    instance: randomBytes(16).toString('hex'),
    ...extra,
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}

async function waitFor<T>(what: string, get: () => T | null | undefined | Promise<T | null | undefined>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function logText(spec: StartSpec): string {
  try {
    return readFileSync(spec.logFile, 'utf8');
  } catch {
    return '';
  }
}

// What a helper would ask the runner to stop of the app `spec` started as `identity`.
function target(spec: StartSpec, identity: ProcIdentity | null): AppTarget {
  return { app: spec.app, process: identity, instance: spec.instance, uid: spec.runAs?.uid ?? (process.getuid?.() as number) };
}

const logLine = (spec: StartSpec, re: RegExp) => waitFor(`${re} in the log`, () => re.exec(logText(spec)));

// Gone means no /proc entry or a zombie nobody reaped (orphans may wait for a lazy init).
async function isGone(pid: number): Promise<boolean> {
  const st = await readProcStat(pid);
  return st === null || st.state === 'Z';
}

test('the app environment is built from nothing: the listed keys, then start.env', async (t) => {
  const spec = makeSpec('print-env.mjs', { env: { PORT: '8080', LANG: 'en_US.UTF-8' } });
  process.env.STEWARD_LEAK_CANARY = 'must-not-leak';
  t.after(() => {
    delete process.env.STEWARD_LEAK_CANARY;
    spec.cleanup();
  });
  const started = await runner.start(spec);
  t.after(() => runner.stop(target(spec, started.identity), { timeoutMs: 2000 }));
  const env = JSON.parse((await logLine(spec, /^\{.*\}$/m))[0]) as Record<string, string>;
  const me = os.userInfo();
  assert.deepEqual(env, {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: me.homedir,
    USER: me.username,
    LOGNAME: me.username,
    LANG: 'en_US.UTF-8',
    STEWARD_APP: 'web',
    STEWARD_VERSION: '1.0.0',
    STATE_DIRECTORY: spec.stateDir,
    PORT: '8080',
    STEWARD_INSTANCE: spec.instance,
  });
});

test('the app output is appended to its log file, created 0640', async (t) => {
  const spec = makeSpec('crash.mjs');
  t.after(() => spec.cleanup());
  const first = await runner.start(spec);
  assert.deepEqual(await first.exited, { code: 3, signal: null });
  const second = await runner.start(spec);
  await second.exited;
  assert.equal(logText(spec), 'crashing\ncrashing\n');
  const held = readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === spec.logFile;
    } catch {
      return false;
    }
  });
  assert.deepEqual(held, [], 'the test process (the helper) holds no fd of the log');
  assert.equal(statSync(spec.logFile).mode & 0o777, 0o640);
  assert.equal(statSync(spec.stateDir).mode & 0o777, 0o750);
});

test('the app runs in its own session and process group', async (t) => {
  const spec = makeSpec('ignore-sigterm.mjs');
  t.after(() => spec.cleanup());
  const started = await runner.start(spec);
  t.after(() => runner.stop(target(spec, started.identity), { timeoutMs: 100 }));
  const st = await readProcStat(started.identity.pid);
  assert.ok(st);
  assert.equal(st.pgid, started.identity.pid);
  assert.equal(st.sid, started.identity.pid);
  assert.deepEqual(await readProcIdentity(started.identity.pid), started.identity);
});

test('stop kills an app that ignores SIGTERM once the timeout has passed', async (t) => {
  const spec = makeSpec('ignore-sigterm.mjs');
  t.after(() => spec.cleanup());
  const started = await runner.start(spec);
  await logLine(spec, /^ready$/m);
  const t0 = performance.now();
  await runner.stop(target(spec, started.identity), { timeoutMs: 300 });
  assert.ok(performance.now() - t0 >= 290, 'SIGKILL came only after the timeout');
  assert.match(logText(spec), /ignoring SIGTERM/);
  assert.deepEqual(await started.exited, { code: null, signal: 'SIGKILL' });
  assert.equal(await runner.isAlive(started.identity), false);
});

test('stop also kills a child the app forked into its process group', async (t) => {
  const spec = makeSpec('forker.mjs');
  t.after(() => spec.cleanup());
  const started = await runner.start(spec);
  const childPid = Number((await logLine(spec, /^child (\d+)$/m))[1]);
  assert.equal((await readProcStat(childPid))?.pgid, started.identity.pid);
  await runner.stop(target(spec, started.identity), { timeoutMs: 2000 });
  assert.equal(await isGone(childPid), true);
  assert.equal(await runner.isAlive(started.identity), false);
});

test('when the main process dies, the child it forked is killed before its exit is reported', async (t) => {
  const spec = makeSpec('forker.mjs');
  t.after(() => spec.cleanup());
  const started = await runner.start(spec);
  const childPid = Number((await logLine(spec, /^child (\d+)$/m))[1]);
  process.kill(started.identity.pid, 'SIGKILL');
  assert.deepEqual(await started.exited, { code: null, signal: 'SIGKILL' });
  assert.equal(await isGone(childPid), true, 'the forked child outlived its main process');
});

test('stop kills the rest of the group when its leader is already gone and no runner heard it', async (t) => {
  const spec = makeSpec('forker.mjs');
  t.after(() => spec.cleanup());
  const identity = await startElsewhere(spec);
  const childPid = Number((await logLine(spec, /^child (\d+)$/m))[1]);
  process.kill(identity.pid, 'SIGKILL');
  await waitFor('the leader to be reaped', async () => (await readProcStat(identity.pid)) === null || (await readProcStat(identity.pid))?.state === 'Z');
  assert.equal(await isGone(childPid), false, 'nobody heard the exit: the child outlived its leader');
  await runner.stop(target(spec, identity), { timeoutMs: 2000 });
  assert.equal(await isGone(childPid), true);
});

// An app's process ends (stopped, or crashed) and the helper starts the next one at once (an
// update, a respawn), with the same instance token and, as root without systemd, in the same
// cgroup. The old process's exit may be heard only after the new one started (a busy helper):
// its "kill what it left" must not take the new process for a leftover. Here the old one is
// killed while the event loop is held, and the new one spawned before the loop runs again.
for (const proof of ['token', 'cgroup'] as const) {
  test(`a process started before the previous one's exit is heard is not killed as its leftover (${proof})`, async (t) => {
    // The folder only names the cgroup home (its hash); removed with it.
    const prefix = mkdtempSync(path.join(os.tmpdir(), 'steward-cgroup-home-'));
    t.after(() => rmSync(prefix, { recursive: true, force: true }));
    const home = proof === 'cgroup' ? findCgroupHome(prefix) : null;
    if (proof === 'cgroup' && !home) return skipUnlessCI(t, 'no app cgroups here (they need root, no systemd as PID 1 and a writable cgroup2 mount)');
    if (home) t.after(() => removeCgroupHome(home));
    const r = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups: home });
    const spec = makeSpec('hang.mjs');
    t.after(() => spec.cleanup());
    const old = await r.start(spec);
    process.kill(old.identity.pid, 'SIGKILL');
    // The loop is held until the old process is a zombie, its exit not yet heard.
    const deadline = performance.now() + 2000;
    while ((readProcStatSync(old.identity.pid)?.state ?? 'Z') !== 'Z' && performance.now() < deadline);
    const next = r.start(spec);
    await old.exited;
    const started = await next;
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(await r.isAlive(started.identity), true, 'the new process was killed as the old one\'s leftover');
    await r.stop(target(spec, started.identity), { timeoutMs: 100 });
  });
}

test('stop is idempotent: a second stop and a stop after exit both succeed', async (t) => {
  const spec = makeSpec('ignore-sigterm.mjs');
  t.after(() => spec.cleanup());
  const started = await runner.start(spec);
  await runner.stop(target(spec, started.identity), { timeoutMs: 100 });
  await runner.stop(target(spec, started.identity), { timeoutMs: 100 });
  const crashed = await runner.start({ ...spec, command: [process.execPath, path.join(APPS, 'crash.mjs')] });
  await crashed.exited;
  await runner.stop(target(spec, crashed.identity));
});

test('stop signals nothing when the recorded pid now belongs to another process', async (t) => {
  // An unrelated group leader: signalling its group by mistake would kill it.
  const other = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
  t.after(() => other.kill('SIGKILL'));
  const real = await waitFor('sleep to start', () => readProcIdentity(other.pid as number));
  const reused: ProcIdentity = { ...real, startTicks: real.startTicks - 1 };
  const of = (identity: ProcIdentity): AppTarget => ({ app: 'web', process: identity, instance: null, uid: process.getuid?.() as number });
  await runner.stop(of(reused), { timeoutMs: 100 });
  const otherBoot: ProcIdentity = { ...real, bootId: '00000000-0000-0000-0000-000000000000' };
  await runner.stop(of(otherBoot), { timeoutMs: 100 });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(other.exitCode, null);
  assert.equal(other.signalCode, null);
  assert.equal(await runner.isAlive(real), true);
  assert.equal(await runner.isAlive(reused), false);
  assert.equal(await runner.isAlive(otherBoot), false);
});

test('isAlive is false once the app exited', async (t) => {
  const spec = makeSpec('crash.mjs');
  t.after(() => spec.cleanup());
  const started = await runner.start(spec);
  await started.exited;
  assert.equal(await runner.isAlive(started.identity), false);
});

test('isAlive counts a zombie as dead', async (t) => {
  // The background subshell becomes a zombie: it exits only once its parent has turned into
  // `sleep 30`, which never reaps it. (`sleep 0 &` raced the exec: a shell that reaped it first
  // left no zombie to find.)
  const script = 'p=$$; (while [ "$(cat /proc/$p/comm)" != sleep ]; do sleep 0.01; done) & echo $!; exec sleep 30';
  const sh = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => sh.kill('SIGKILL'));
  const zpid = await waitFor('the zombie pid', () => /^(\d+)$/m.exec(String(sh.stdout.read() ?? ''))?.[1]);
  const id = await waitFor('the zombie', async () => {
    const st = await readProcStat(Number(zpid));
    return st?.state === 'Z' ? readProcIdentity(Number(zpid)) : null;
  });
  assert.equal(id.bootId, await readBootId());
  assert.equal(await runner.isAlive(id), false);
});

test('a command that cannot be run is RELEASE_INVALID and leaves nothing running', async (t) => {
  const spec = makeSpec('crash.mjs');
  t.after(() => spec.cleanup());
  const notExec = path.join(spec.cwd, 'not-executable');
  writeFileSync(notExec, '#!/bin/sh\nsleep 30\n', { mode: 0o644 });
  for (const command of [['/nonexistent/app'], ['no-such-command-on-path'], [notExec]]) {
    await assert.rejects(runner.start({ ...spec, command }), (err: unknown) => {
      assert.ok(err instanceof StewardError);
      assert.equal(err.code, 'RELEASE_INVALID');
      assert.match(err.message, /^cannot start web 1\.0\.0: /);
      return true;
    });
  }
  assert.equal(logText(spec), '');
});

test('as root, the app runs as its user and owns its state folder', async (t) => {
  if (!IS_ROOT) {
    skipUnlessCI(t, 'needs root to switch users');
    return;
  }
  const nobody = await lookupUser('nobody');
  assert.ok(nobody, 'nobody is in /etc/passwd');
  const spec = makeSpec('print-env.mjs', { runAs: nobody });
  t.after(() => spec.cleanup());
  const started = await runner.start(spec);
  t.after(() => runner.stop(target(spec, started.identity), { timeoutMs: 2000 }));
  const env = JSON.parse((await logLine(spec, /^\{.*\}$/m))[0]) as Record<string, string>;
  assert.equal(env.USER, 'nobody');
  assert.equal(env.HOME, nobody.home);
  const status = readFileSync(`/proc/${started.identity.pid}/status`, 'utf8');
  assert.match(status, new RegExp(`^Uid:\\s+${nobody.uid}\\s+${nobody.uid}\\s+${nobody.uid}\\s+${nobody.uid}$`, 'm'));
  assert.match(status, new RegExp(`^Gid:\\s+${nobody.gid}\\s+${nobody.gid}\\s+${nobody.gid}\\s+${nobody.gid}$`, 'm'));
  assert.match(status, /^Groups:\s*$/m);
  const st = statSync(spec.stateDir);
  assert.equal(st.uid, nobody.uid);
  assert.equal(st.gid, nobody.gid);
  assert.equal(st.mode & 0o777, 0o750);
});

// Starts the app from a stand-in helper that exits at once (test/fixtures/apps/start-and-exit.mjs),
// as a helper that crashed would leave it: nobody hears its exit.
async function startElsewhere(spec: StartSpec & { cleanup?: unknown }): Promise<ProcIdentity> {
  const { cleanup: _c, ...plain } = spec;
  const out = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, [path.join(REPO, 'test/fixtures/apps/start-and-exit.mjs'), JSON.stringify(plain)], { timeout: 10_000 }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
  });
  return JSON.parse(out) as ProcIdentity;
}

test('the app keeps running after the helper that started it exits', async (t) => {
  const spec = makeSpec('ignore-sigterm.mjs');
  t.after(() => spec.cleanup());
  const identity = await startElsewhere(spec);
  await logLine(spec, /^ready$/m);
  assert.equal(await runner.isAlive(identity), true);
  await runner.stop(target(spec, identity), { timeoutMs: 200 });
  assert.equal(await runner.isAlive(identity), false);
});
