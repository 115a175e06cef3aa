import { test } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../../../src/platform/clock.js';
import { readBootId, type ProcIdentity } from '../../../src/platform/proc-identity.js';
import { AppLocks } from '../../../src/helper/app-locks.js';
import { readRunRecord } from '../../../src/helper/runners/run-record.js';
import type { AppRunner, AppTarget, ExitInfo } from '../../../src/helper/runners/runner.js';
import { Supervisor } from '../../../src/helper/supervisor/supervisor.js';
import type { UpdateContext } from '../../../src/helper/update/context.js';
import { ensureRunning } from '../../../src/helper/update/first-pass.js';
import { supervisedHost } from '../../helpers/supervised-host.js';
import { waitFor } from '../../helpers/systemd-container.js';

// The poll of adopted processes (docs/design.md §5: every 2 s) runs only while some app's process is
// adopted, i.e. not this helper's child: a child's exit is heard at once, so an idle helper whose
// apps are its children wakes for nothing but the 60 s sweep (issue 8 row 5). These hold that an
// adopted process's death is still found by the poll (the sweep here is an hour away), and that
// the poll stops once every process is a child again.

// Made-up processes: `die(pid)` ends one the way a SIGKILL would; a child's end is reported
// through `exited`, as the process runner's SIGCHLD does.
function fakeRunner(bootId: string) {
  let nextPid = 4_100_000;
  const live = new Map<number, (info: ExitInfo) => void>();
  let starts = 0;
  const runner: AppRunner = {
    async start() {
      const pid = nextPid++;
      starts++;
      const exited = new Promise<ExitInfo>((resolve) => live.set(pid, resolve));
      return { identity: { pid, startTicks: pid, bootId }, startedAt: Date.now(), exited };
    },
    async stop({ process: identity }: AppTarget) {
      if (!identity) return;
      live.get(identity.pid)?.({ code: null, signal: 'SIGTERM' });
      live.delete(identity.pid);
    },
    async isAlive(identity: ProcIdentity) {
      return live.has(identity.pid);
    },
  };
  const die = (pid: number) => {
    live.get(pid)?.({ code: null, signal: 'SIGKILL' });
    live.delete(pid);
  };
  return { runner, die, starts: () => starts };
}

async function oneAppHost(runner: AppRunner) {
  const { host, ctx } = await supervisedHost({ web: {} }, runner, systemClock);
  return { ctx, cleanup: host.cleanup };
}

// A helper's start over `ctx` as main.ts does it: first pass, supervisor started, its first pass.
async function helperStart(ctx: UpdateContext): Promise<Supervisor> {
  const sup = new Supervisor(ctx, { sweepMs: 3_600_000, pollMs: 20 });
  ctx.onStarted = (app, proc) => sup.watch(app, proc);
  await ensureRunning(ctx, 'web');
  sup.start();
  await sup.requestPass('start');
  return sup;
}

test('an app whose process is the helper\'s child is not polled; its death is heard at once and respawned', async (t) => {
  const fake = fakeRunner(await readBootId());
  const { ctx, cleanup } = await oneAppHost(fake.runner);
  const sup = await helperStart(ctx);
  t.after(() => {
    sup.close();
    cleanup();
  });
  assert.equal(fake.starts(), 1);
  assert.equal(sup.polling, false, 'no poll for a child');
  const first = (await readRunRecord(ctx.paths, 'web'))!.process!.pid;
  fake.die(first);
  await waitFor('the respawn', async () => fake.starts() === 2, 20_000, 10);
  assert.equal(sup.polling, false, 'the respawned process is a child too');
});

test('an adopted process is polled; its death is found by the poll (not the sweep), and the poll stops once its replacement is a child', async (t) => {
  const fake = fakeRunner(await readBootId());
  const { ctx, cleanup } = await oneAppHost(fake.runner);
  const old = await helperStart(ctx);
  const pid = (await readRunRecord(ctx.paths, 'web'))!.process!.pid;
  // The helper restarts: the new one adopts the running process, which is not its child.
  old.close();
  const sup = await helperStart({ ...ctx, locks: new AppLocks(), blockedInMemory: new Map() });
  t.after(() => {
    sup.close();
    cleanup();
  });
  assert.equal(fake.starts(), 1, 'adopted, not started again');
  assert.equal(sup.polling, true, 'the adopted process is polled');
  // Nobody hears this death but the poll: the old helper's `exited` listener is closed.
  fake.die(pid);
  // (The record is written after the runner's start: wait for it, not for the start.)
  const rec = await waitFor('the poll to find the death and the pass to respawn', async () => {
    const r = await readRunRecord(ctx.paths, 'web');
    return r?.process && r.process.pid !== pid && r.supervisor?.state === 'running' ? r : null;
  }, 20_000, 10);
  assert.equal(fake.starts(), 2);
  assert.equal(rec.supervisor?.attempts, 1, 'one respawn');
  await waitFor('the poll to stop', async () => !sup.polling, 20_000, 10);
});
