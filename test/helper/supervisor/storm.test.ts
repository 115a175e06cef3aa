import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { StewardError } from '../../../src/core/errors.js';
import { versionDir, versionsDir } from '../../../src/core/paths.js';
import type { Clock } from '../../../src/platform/clock.js';
import { systemClock } from '../../../src/platform/clock.js';
import { readBootId, readProcIdentity, type ProcIdentity } from '../../../src/platform/proc-identity.js';
import { AppLocks } from '../../../src/helper/app-locks.js';
import { readRunRecord, writeRunRecord } from '../../../src/helper/runners/run-record.js';
import { createProcessRunner } from '../../../src/helper/runners/process-runner.js';
import type { AppRunner, AppTarget, ExitInfo, StartSpec } from '../../../src/helper/runners/runner.js';
import { Supervisor } from '../../../src/helper/supervisor/supervisor.js';
import { appTarget, startVersion } from '../../../src/helper/update/app-process.js';
import type { UpdateContext } from '../../../src/helper/update/context.js';
import { ensureRunning } from '../../../src/helper/update/first-pass.js';
import { processesUnder } from '../../helpers/app-processes.js';
import { supervisedHost } from '../../helpers/supervised-host.js';
import { waitFor as poll } from '../../helpers/systemd-container.js';

// Polls every 10 ms (records on a tmpfs are cheap to read), for up to 20 s.
const waitFor = <T>(what: string, fn: () => Promise<T | null | undefined | false>) => poll(what, fn, 20_000, 10);

// Issue 7 item 6: the supervisor under a storm of exits, a helper restart during a backoff
// wait, and a dead app's pid reused by an unrelated process.

// A runner whose processes are made up: each start is told by `plan` whether its process dies
// at once (on the next turn of the event loop) or stays up. It counts live processes per app.
function stormRunner(bootId: string, plan: (app: string, nth: number) => 'crash' | 'stay') {
  let nextPid = 4_000_000;
  const live = new Map<number, string>();
  const starts = new Map<string, number>();
  let mostAtOnce = 0;
  const runner: AppRunner = {
    async start(spec: StartSpec) {
      const pid = nextPid++;
      const n = (starts.get(spec.app) ?? 0) + 1;
      starts.set(spec.app, n);
      live.set(pid, spec.app);
      mostAtOnce = Math.max(mostAtOnce, [...live.values()].filter((a) => a === spec.app).length);
      const exited = new Promise<ExitInfo>((resolve) => {
        if (plan(spec.app, n) === 'crash') {
          setImmediate(() => {
            live.delete(pid);
            resolve({ code: 3, signal: null });
          });
        }
      });
      return { identity: { pid, startTicks: pid, bootId }, startedAt: Date.now(), exited };
    },
    async stop({ process: identity }: AppTarget) {
      if (identity) live.delete(identity.pid);
    },
    async isAlive(identity: ProcIdentity) {
      return live.has(identity.pid);
    },
  };
  return { runner, starts, live, mostAtOnce: () => mostAtOnce };
}

// A wall clock the test moves; sleeps are real (the supervisor's waits are real timers).
function movableClock(): Clock & { set(ms: number): void } {
  let wall = Date.now();
  return { now: () => wall, monotonic: () => performance.now(), sleep: systemClock.sleep, set: (ms) => (wall = ms) };
}

// A helper's start over `ctx`: the first pass for every app, then the supervisor's first pass.
async function helperStart(ctx: UpdateContext, onCreated: (sup: Supervisor) => void = () => {}): Promise<Supervisor> {
  const sup = new Supervisor(ctx, { sweepMs: 60_000, pollMs: 60_000 });
  onCreated(sup);
  ctx.onStarted = (app, proc) => sup.watch(app, proc);
  for (const app of Object.keys(ctx.config.apps).sort()) await ensureRunning(ctx, app);
  await sup.requestPass('start');
  return sup;
}


test('200 exits in a burst: passes coalesce, one process per app at a time, the budget counted exactly, no crash', async (t) => {
  // a, b and c crash 65, 65 and 64 times and then stay up; d crashes for good and must be given
  // up on after exactly maxAttempts respawns: 1 + 5 starts, so 200 exits in all.
  const crashes: Record<string, number> = { a: 65, b: 65, c: 64, d: Infinity };
  const bootId = await readBootId();
  const fake = stormRunner(bootId, (app, nth) => (nth <= (crashes[app] as number) ? 'crash' : 'stay'));
  const many = { restart: { baseMs: 0, capMs: 0, maxAttempts: 1000, healthyMs: 3_600_000 } };
  const { host, ctx } = await supervisedHost({ a: many, b: many, c: many, d: { restart: { baseMs: 0, capMs: 0, maxAttempts: 5, healthyMs: 3_600_000 } } }, fake.runner, systemClock);
  let requests = 0;
  const passPromises = new Set<Promise<void>>();
  let inside = 0;
  let overlapped = false;
  const tryAcquire = ctx.locks.tryAcquire.bind(ctx.locks);
  ctx.locks.tryAcquire = (app, work) => {
    // The reconciles of supervisor passes (a first pass at the start holds its app's lock too).
    if (work.op !== 'supervise') return tryAcquire(app, work);
    if (++inside > 1) overlapped = true;
    const held = tryAcquire(app, work);
    return { work: held.work, release: () => (inside--, held.release()) };
  };
  let sup: Supervisor | null = null;
  t.after(() => {
    sup?.close();
    host.cleanup();
  });
  // Each pass is one promise; requests that share a queued pass get the same one.
  sup = await helperStart(ctx, (s) => {
    const request = s.requestPass.bind(s);
    s.requestPass = (why) => {
      requests++;
      const p = request(why);
      passPromises.add(p);
      return p;
    };
  });
  const records = () => Promise.all(['a', 'b', 'c', 'd'].map((app) => readRunRecord(ctx.paths, app)));
  const settled = await waitFor('the storm to settle', async () => {
    const recs = await records();
    const up = recs.slice(0, 3).every((r) => r?.supervisor?.state === 'running' && r.process && fake.live.has(r.process.pid));
    return up && recs[3]?.supervisor?.state === 'error' ? recs : null;
  });
  const exits = [...fake.starts.entries()].reduce((sum, [app, n]) => sum + (app === 'd' ? n : n - 1), 0);
  const passes = passPromises.size;
  console.log(`storm: ${exits} exits, ${requests} pass requests, ${passes} passes, starts ${JSON.stringify(Object.fromEntries(fake.starts))}`);
  assert.equal(exits, 200);
  assert.deepEqual(Object.fromEntries(fake.starts), { a: 66, b: 66, c: 65, d: 6 }, 'every exit got exactly one respawn, no more');
  assert.deepEqual(settled.map((r) => r?.supervisor?.attempts), [65, 65, 64, 5], 'each respawn spent one attempt');
  assert.match(settled[3]?.supervisor?.giveUpReason ?? '', /gave up after 5 respawns/);
  assert.equal(fake.mostAtOnce(), 1, 'never two processes of one app at once');
  assert.equal(overlapped, false, 'reconciles never overlap');
  // Without coalescing every exit's request would be a pass of its own (201 here); how many share
  // one depends on how long a pass takes against how fast the fake exits come, so only that some
  // do is held (a pass is shorter since reads of /proc and `current` are synchronous: 85 -> ~100).
  assert.ok(passes < exits, `exits heard during a pass share the next one: ${passes} passes for ${exits} exits`);
  // Nothing is left queued or respawning: a later sweep changes nothing.
  const before = JSON.stringify(Object.fromEntries(fake.starts));
  await sup.requestPass('sweep');
  assert.equal(JSON.stringify(Object.fromEntries(fake.starts)), before);
});

test('a helper restart during a backoff wait keeps the wait and the budget: no respawn before the persisted time', async (t) => {
  const bootId = await readBootId();
  const fake = stormRunner(bootId, (_app, nth) => (nth <= 2 ? 'crash' : 'stay'));
  const clock = movableClock();
  // Respawns at +0, then +60 s: the second exit waits a minute.
  const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 30_000, capMs: 300_000, maxAttempts: 5, healthyMs: 600_000 } } }, fake.runner, clock);
  let sup: Supervisor | null = null;
  t.after(() => {
    sup?.close();
    host.cleanup();
  });
  // The first helper: started, crashed, respawned at once, crashed again: now waiting.
  await startVersion(ctx, 'web', '1.0.0', 'update');
  sup = new Supervisor(ctx, { sweepMs: 60_000, pollMs: 60_000 });
  ctx.onStarted = (app, proc) => sup?.watch(app, proc);
  const lastStart = await readRunRecord(ctx.paths, 'web');
  sup.watch('web', { identity: lastStart!.process!, startedAt: clock.now(), exited: new Promise((r) => setImmediate(() => r({ code: 3, signal: null }))) });
  const waiting = await waitFor('the backoff wait', async () => {
    const r = await readRunRecord(ctx.paths, 'web');
    // (A respawn due at once is `waiting` for a moment too: wait for the one a minute away.)
    return r?.supervisor?.state === 'waiting' && (r.supervisor.nextAttemptAt ?? 0) > clock.now() ? r.supervisor : null;
  });
  assert.equal(waiting.attempts, 1);
  assert.equal(waiting.nextAttemptAt, clock.now() + 60_000);
  assert.equal(fake.starts.get('web'), 2);

  // The helper dies and a new one starts 10 s later (same boot): nothing starts early.
  sup.close();
  clock.set(clock.now() + 10_000);
  sup = await helperStart({ ...ctx, locks: new AppLocks(), blockedInMemory: new Map() });
  assert.equal(fake.starts.get('web'), 2, 'the new helper did not start the app before its time');
  const after = await readRunRecord(ctx.paths, 'web');
  assert.equal(after?.supervisor?.state, 'waiting');
  assert.equal(after?.supervisor?.attempts, 1, 'the budget is not reset');
  assert.equal(after?.supervisor?.nextAttemptAt, waiting.nextAttemptAt, 'the schedule survives');

  // One millisecond early is still early; at the persisted time the respawn comes, and spends one.
  clock.set(waiting.nextAttemptAt! - 1);
  await sup.requestPass('sweep');
  assert.equal(fake.starts.get('web'), 2);
  clock.set(waiting.nextAttemptAt!);
  await sup.requestPass('sweep');
  assert.equal(fake.starts.get('web'), 3, 'respawned once its time came');
  const respawned = await readRunRecord(ctx.paths, 'web');
  assert.equal(respawned?.supervisor?.state, 'running');
  assert.equal(respawned?.supervisor?.attempts, 2);
  assert.ok((respawned?.supervisor?.lastStartAt ?? 0) >= waiting.nextAttemptAt!, 'not earlier than the persisted schedule');
});

test('an app given up on stays down across a helper restart in the same boot', async (t) => {
  const bootId = await readBootId();
  const fake = stormRunner(bootId, () => 'crash');
  const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 0, capMs: 0, maxAttempts: 2, healthyMs: 600_000 } } }, fake.runner, systemClock);
  let sup: Supervisor | null = null;
  t.after(() => {
    sup?.close();
    host.cleanup();
  });
  sup = await helperStart(ctx);
  await waitFor('error', async () => (await readRunRecord(ctx.paths, 'web'))?.supervisor?.state === 'error');
  assert.equal(fake.starts.get('web'), 3);
  sup.close();
  sup = await helperStart({ ...ctx, locks: new AppLocks(), blockedInMemory: new Map() });
  assert.equal(fake.starts.get('web'), 3, 'no start after the budget is spent');
  assert.equal((await readRunRecord(ctx.paths, 'web'))?.supervisor?.state, 'error');
});

test('respawns whose process exits before its start completes count as attempts, and the give-up reason says how it exited', async (t) => {
  const bootId = await readBootId();
  const fake = stormRunner(bootId, () => 'crash');
  // The systemd runner's refusal when the app exits before its MainPID is read.
  const start = fake.runner.start;
  fake.runner.start = async (spec) => {
    if ((fake.starts.get(spec.app) ?? 0) === 0) return start(spec);
    fake.starts.set(spec.app, (fake.starts.get(spec.app) ?? 0) + 1);
    throw new StewardError('RELEASE_INVALID', `cannot start ${spec.app}: it exited at once`, { details: { exit: { code: 3, signal: null } } });
  };
  const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 0, capMs: 0, maxAttempts: 2, healthyMs: 600_000 } } }, fake.runner, systemClock);
  let sup: Supervisor | null = null;
  t.after(() => {
    sup?.close();
    host.cleanup();
  });
  sup = await helperStart(ctx);
  const rec = await waitFor('error', async () => {
    const r = await readRunRecord(ctx.paths, 'web');
    return r?.supervisor?.state === 'error' ? r : null;
  });
  assert.equal(fake.starts.get('web'), 3, 'the first start and two respawns that failed to start');
  assert.match(rec.supervisor?.giveUpReason ?? '', /^gave up after 2 respawns: the last process exited with code 3/);
});

test('an own child found dead before its runner reports how it ended waits for the report: the give-up reason names the code', async (t) => {
  const bootId = await readBootId();
  // The systemd runner on a busy host: the app is gone from /proc at once, but the systemd-run
  // client reports its code 3 only 2.5 s later, while a pass for another reason finds it dead.
  const fake = stormRunner(bootId, () => 'stay');
  const start = fake.runner.start;
  fake.runner.start = async (spec) => {
    const started = await start(spec);
    fake.live.delete(started.identity.pid);
    return { ...started, exited: new Promise<ExitInfo>((r) => setTimeout(() => r({ code: 3, signal: null }), 2500)) };
  };
  const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 0, capMs: 0, maxAttempts: 1, healthyMs: 600_000 } } }, fake.runner, systemClock);
  let sup: Supervisor | null = null;
  t.after(() => {
    sup?.close();
    host.cleanup();
  });
  sup = new Supervisor(ctx, { sweepMs: 60_000, pollMs: 60_000 });
  ctx.onStarted = (app, proc) => sup?.watch(app, proc);
  await startVersion(ctx, 'web', '1.0.0', 'update');
  await sup.requestPass('sweep');
  assert.equal(fake.starts.get('web'), 1, 'nothing decided before the report');
  const respawned = await waitFor('the respawn', async () => {
    const r = await readRunRecord(ctx.paths, 'web');
    return fake.starts.get('web') === 2 && r?.supervisor?.attempts === 1 ? r : null;
  });
  assert.deepEqual(respawned.supervisor?.lastExit, { code: 3, signal: null }, 'the first exit, as its runner reported it');
  // The respawned process dies the same way, and a pass finds it before its report again.
  await sup.requestPass('sweep');
  const rec = await waitFor('error', async () => {
    const r = await readRunRecord(ctx.paths, 'web');
    return r?.supervisor?.state === 'error' ? r : null;
  });
  assert.equal(fake.starts.get('web'), 2, 'the first start and one respawn');
  assert.deepEqual(rec.supervisor?.lastExit, { code: 3, signal: null });
  assert.match(rec.supervisor?.giveUpReason ?? '', /^gave up after 1 respawns?: the last process exited with code 3/);
});

// A live process that is none of steward's, in its own process group.
async function unrelatedProcess(): Promise<{ pid: number; identity: ProcIdentity; alive: () => Promise<boolean>; kill: () => void }> {
  const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
  child.unref();
  const pid = child.pid as number;
  const identity = (await waitFor('the unrelated process', () => readProcIdentity(pid))) as ProcIdentity;
  return {
    pid,
    identity,
    alive: async () => {
      const now = await readProcIdentity(pid);
      return now !== null && now.startTicks === identity.startTicks && child.exitCode === null && child.signalCode === null;
    },
    kill: () => child.kill('SIGKILL'),
  };
}

for (const when of ['at the helper start', 'in a supervisor pass'] as const) {
  test(`a dead app's pid reused by an unrelated process ${when}: never adopted, never signalled, the app respawned`, async (t) => {
    const runner = createProcessRunner({ clock: systemClock, isRoot: process.getuid?.() === 0 });
    const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 0, capMs: 0, maxAttempts: 5, healthyMs: 600_000 }, stopTimeoutMs: 1000 } }, runner, systemClock);
    const other = await unrelatedProcess();
    let sup: Supervisor | null = null;
    const started: number[] = [];
    t.after(async () => {
      sup?.close();
      other.kill();
      await runner.stop(await appTarget(ctx, 'web', await readRunRecord(ctx.paths, 'web').catch(() => null)), { timeoutMs: 500 });
      host.cleanup();
    });
    // The app's recorded process is gone and its pid now belongs to `other`: same pid, a
    // different start time (what the kernel gives a reused pid).
    const dead = { pid: other.pid, startTicks: other.identity.startTicks - 1, bootId: other.identity.bootId };
    const record = { schemaVersion: 1 as const, app: 'web', expected: 'running' as const, version: '1.0.0', process: dead, startedAt: Date.now() - 1000 };
    if (when === 'at the helper start') {
      await writeRunRecord(ctx.paths, record);
      sup = await helperStart(ctx);
    } else {
      const supervisor = { state: 'running' as const, attempts: 0, lastStartAt: Date.now() - 1000, lastExitAt: null, nextAttemptAt: null, lastExit: null, giveUpReason: null };
      await writeRunRecord(ctx.paths, { ...record, supervisor });
      sup = new Supervisor(ctx, { sweepMs: 60_000, pollMs: 60_000 });
      ctx.onStarted = (app, proc) => sup?.watch(app, proc);
      await sup.requestPass('sweep');
    }
    const rec = await readRunRecord(ctx.paths, 'web');
    assert.ok(rec?.process, 'the app has a process');
    started.push(rec.process.pid);
    assert.notEqual(rec.process.pid, other.pid, 'the unrelated process is not adopted');
    assert.ok(await runner.isAlive(rec.process), 'the app runs again');
    assert.equal(rec.supervisor?.state, 'running');
    assert.ok(await other.alive(), 'the unrelated process was never signalled');
    // And a later pass leaves both alone.
    await sup.requestPass('sweep');
    assert.equal((await readRunRecord(ctx.paths, 'web'))?.process?.pid, started[0]);
    assert.ok(await other.alive());
  });
}


test('a clock jumping back a day during a backoff wait does not stretch the wait; jumping forward respawns at once and keeps the budget', async (t) => {
  const bootId = await readBootId();
  const fake = stormRunner(bootId, (_app, nth) => (nth <= 3 ? 'crash' : 'stay'));
  const clock = movableClock();
  const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 30_000, capMs: 300_000, maxAttempts: 5, healthyMs: 600_000 } } }, fake.runner, clock);
  let sup: Supervisor | null = null;
  t.after(() => {
    sup?.close();
    host.cleanup();
  });
  sup = await helperStart(ctx);
  const waitingFor = async (attempts: number) =>
    waitFor(`the wait after ${attempts} respawns`, async () => {
      const r = await readRunRecord(ctx.paths, 'web');
      return r?.supervisor?.state === 'waiting' && r.supervisor.attempts === attempts && (r.supervisor.nextAttemptAt ?? 0) > clock.now() ? r.supervisor : null;
    });
  const first = await waitingFor(1);
  assert.equal(first.nextAttemptAt, clock.now() + 60_000);

  // Back a day: the persisted time is a day and a minute away now; it counts as at most the
  // longest wait the attempts give (60 s), not a day.
  const day = 86_400_000;
  clock.set(clock.now() - day);
  await sup.requestPass('sweep');
  assert.equal(fake.starts.get('web'), 2, 'not respawned early');
  clock.set(clock.now() + 60_000);
  await sup.requestPass('sweep');
  assert.equal(fake.starts.get('web'), 3, 'respawned 60 s after the jump, not a day later');

  // Forward a day during the next wait: due at once, and the budget is not refilled by the jump.
  const second = await waitingFor(2);
  assert.equal(second.nextAttemptAt, clock.now() + 120_000);
  clock.set(clock.now() + day);
  await sup.requestPass('sweep');
  assert.equal(fake.starts.get('web'), 4);
  const rec = await readRunRecord(ctx.paths, 'web');
  assert.equal(rec?.supervisor?.attempts, 3, 'the jump refilled nothing');
});

test('a respawn writes the exit and the new process in one record, after the spawn; the exit is not lost', async (t) => {
  const bootId = await readBootId();
  const fake = stormRunner(bootId, (_app, nth) => (nth === 1 ? 'crash' : 'stay'));
  const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 0, capMs: 0, maxAttempts: 5, healthyMs: 600_000 } } }, fake.runner, systemClock);
  // What the record said when each start was asked for.
  const seenAtStart: Array<Awaited<ReturnType<typeof readRunRecord>>> = [];
  const start = fake.runner.start;
  fake.runner.start = async (spec) => {
    seenAtStart.push(await readRunRecord(ctx.paths, spec.app));
    return start(spec);
  };
  let sup: Supervisor | null = null;
  t.after(() => {
    sup?.close();
    host.cleanup();
  });
  sup = await helperStart(ctx);
  const rec = await waitFor('the respawn', async () => {
    const r = await readRunRecord(ctx.paths, 'web');
    return fake.starts.get('web') === 2 && r?.process && fake.live.has(r.process.pid) ? r : null;
  });
  const [, atRespawn] = seenAtStart;
  // Nothing was written between the exit and the respawn's spawn: the record still names the
  // first process as running.
  assert.equal(atRespawn?.supervisor?.state, 'running');
  assert.equal(atRespawn?.supervisor?.lastExit, null);
  assert.equal(atRespawn?.process?.pid, 4_000_000, 'the first (dead) process');
  // The one write after it holds both: the exit heard and the respawn spent.
  assert.equal(rec.supervisor?.state, 'running');
  assert.deepEqual(rec.supervisor?.lastExit, { code: 3, signal: null });
  assert.equal(typeof rec.supervisor?.lastExitAt, 'number');
  assert.equal(rec.supervisor?.attempts, 1);
  assert.notEqual(rec.process?.pid, atRespawn?.process?.pid);
});

test('a process a crash left unrecorded (between a spawn and its record) is stopped at the helper start before another starts', async (t) => {
  const runner = createProcessRunner({ clock: systemClock, isRoot: process.getuid?.() === 0 });
  const { host, ctx } = await supervisedHost({ web: { restart: { baseMs: 0, capMs: 0, maxAttempts: 5, healthyMs: 600_000 }, stopTimeoutMs: 1000 } }, runner, systemClock);
  // The spawn that the crash left: the app's command, in its own session, in its release tree,
  // with the instance token its record held before the spawn.
  const instance = '00112233445566778899aabbccddeeff';
  const orphan = spawn('sleep', ['30'], { cwd: versionDir(ctx.paths, 'web', '1.0.0'), detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, STEWARD_INSTANCE: instance } });
  const orphanGone = new Promise<string>((r) => orphan.once('exit', () => r('gone')));
  const dead = await unrelatedProcess();
  dead.kill();
  let sup: Supervisor | null = null;
  t.after(async () => {
    sup?.close();
    orphan.kill('SIGKILL');
    await runner.stop(await appTarget(ctx, 'web', await readRunRecord(ctx.paths, 'web').catch(() => null)), { timeoutMs: 500 });
    host.cleanup();
  });
  await waitFor('the orphan', () => readProcIdentity(orphan.pid as number));
  await waitFor('the dead process', async () => !(await dead.alive()));
  // The record as the crash left it: the previous process (gone), still `running`.
  const supervisor = { state: 'running' as const, attempts: 0, lastStartAt: Date.now() - 1000, lastExitAt: null, nextAttemptAt: null, lastExit: null, giveUpReason: null };
  await writeRunRecord(ctx.paths, { schemaVersion: 1, app: 'web', expected: 'running', version: '1.0.0', process: dead.identity, startedAt: Date.now() - 1000, instance, supervisor });
  sup = await helperStart(ctx);
  const within = await Promise.race([orphanGone, new Promise<string>((r) => setTimeout(() => r('still running'), 5000))]);
  assert.equal(within, 'gone', 'the unrecorded process was stopped');
  const rec = await readRunRecord(ctx.paths, 'web');
  assert.ok(rec?.process && (await runner.isAlive(rec.process)), 'the app runs, recorded');
  assert.notEqual(rec.process.pid, orphan.pid);
  assert.deepEqual(await processesUnder(versionsDir(ctx.paths, 'web')), [rec.process.pid], 'exactly one process of the app');
});
