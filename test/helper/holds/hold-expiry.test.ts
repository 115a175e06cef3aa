import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { StewardError } from '../../../src/core/errors.js';
import { stateFile } from '../../../src/core/paths.js';
import { appStateSchema } from '../../../src/core/state-schemas.js';
import type { Clock } from '../../../src/platform/clock.js';
import { HoldExpiry, liftDueHolds, RECHECK_MS } from '../../../src/helper/holds/hold-expiry.js';
import { holdFile, readHoldFile } from '../../../src/helper/holds/hold-file.js';
import { liftExpiredHold, putHold, releaseHold, setHold } from '../../../src/helper/ops/hold.js';
import { preflight } from '../../../src/helper/ops/preflight.js';
import { readStatus } from '../../../src/helper/ops/status.js';
import { readAppState } from '../../../src/helper/state/app-state.js';
import type { UpdateContext } from '../../../src/helper/update/context.js';
import { makeFaultHost, type FaultHost } from '../../helpers/fault-host.js';

// The host's own hold with an expiry (docs/design.md §18), in process: app `web` of the fault host,
// the helper's op functions and its expiry loop on a clock the test moves.

const M = 60_000;
const H = 60 * M;
const T0 = 1_800_000_000_000;

// A clock whose sleeps end only when the test moves it on (wall and monotonic together) or
// `jump`s the wall time alone (a clock set forward).
function manualClock(start = T0) {
  let wall = start;
  let mono = 0;
  const sleepers = new Set<{ until: number; resolve: () => void }>();
  const clock: Clock & { advance(ms: number): void; jump(ms: number): void; sleeping(): number } = {
    now: () => wall,
    monotonic: () => mono,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const s = { until: mono + ms, resolve };
        sleepers.add(s);
        signal?.addEventListener('abort', () => (sleepers.delete(s), reject(signal.reason)), { once: true });
      }),
    advance(ms) {
      wall += ms;
      mono += ms;
      for (const s of [...sleepers]) if (s.until <= mono) (sleepers.delete(s), s.resolve());
    },
    jump(ms) {
      wall += ms;
    },
    sleeping: () => sleepers.size,
  };
  return clock;
}

const admin = { kind: 'admin' as const, peer: async () => ({ ok: false as const, why: 'a test without a socket' }) };

async function host(t: TestContext): Promise<FaultHost> {
  const fh = await makeFaultHost();
  t.after(() => fh.cleanup());
  return fh;
}

const hold = (ctx: UpdateContext, reason: string, forMs?: number) => putHold(ctx, { v: 1, id: 1, op: 'hold', app: 'web', reason, ...(forMs !== undefined ? { forMs } : {}) }, admin);
const statusOf = async (fh: FaultHost, now: number) =>
  (await readStatus({ paths: fh.paths, config: fh.context().config, startedAt: now, recovering: false, running: () => undefined, blockedInMemory: new Map(), now }, 'web')).apps[0];
const loopDeps = (ctx: UpdateContext) => ({ clock: ctx.clock, apps: () => ['web'], lift: (app: string, now: number) => liftExpiredHold(ctx, app, now) });

// Waits until the loop sleeps (it has looked at the holds).
async function asleep(clock: ReturnType<typeof manualClock>): Promise<void> {
  for (let i = 0; i < 1000 && clock.sleeping() === 0; i++) await new Promise((r) => setTimeout(r, 1));
  assert.equal(clock.sleeping(), 1, 'the loop sleeps');
}

const isHeld = (err: unknown) => err instanceof StewardError && err.code === 'HELD';

test('a hold with an expiry is lifted by the helper at its until, the lift is recorded, and the control plane may change the app again', async (t) => {
  const fh = await host(t);
  const clock = manualClock();
  const ctx = fh.context(undefined, clock);
  const answer = await hold(ctx, 'change freeze for the audit', 30 * M);
  assert.deepEqual(answer.hold, { by: answer.hold.by, reason: 'change freeze for the audit', at: T0, until: T0 + 30 * M });
  assert.equal(answer.replaced, null);
  assert.match(answer.hold.by, /over admin\.sock/);
  await assert.rejects(
    preflight(ctx, 'web', 'helper'),
    (err: unknown) => isHeld(err) && /\(change freeze for the audit\), until 2027-01-15T08:30:00\.000Z$/.test((err as Error).message),
    'helper.sock (the control plane) is refused while it stands, and told until when',
  );

  const loop = new HoldExpiry(loopDeps(ctx));
  t.after(() => loop.close());
  loop.start();
  await asleep(clock);
  clock.advance(29 * M);
  await asleep(clock);
  assert.equal((await statusOf(fh, clock.now()))?.hold?.until, T0 + 30 * M, 'a minute before its until it stands');

  clock.advance(M);
  await asleep(clock);
  const st = await statusOf(fh, clock.now());
  assert.equal(st?.hold, null, 'lifted');
  assert.deepEqual(st?.holdLifted, { by: answer.hold.by, reason: 'change freeze for the audit', at: T0, until: T0 + 30 * M, liftedAt: T0 + 30 * M, how: 'expired' });
  assert.equal((await readAppState(fh.paths, 'web')).hold, null);
  await preflight(ctx, 'web', 'helper');
});

test('a hold with an expiry survives a helper restart: the next helper reads the same until and lifts it then', async (t) => {
  const fh = await host(t);
  const before = fh.context(undefined, manualClock());
  const put = await hold(before, 'vendor maintenance', 4 * H);

  // A new helper: fresh locks and context, the same files.
  const clock = manualClock(T0 + H);
  const after = fh.context(undefined, clock);
  assert.deepEqual((await statusOf(fh, clock.now()))?.hold, put.hold);
  assert.equal(await liftDueHolds(loopDeps(after)), RECHECK_MS, 'three hours to go: the next look is within the recheck bound');
  await assert.rejects(preflight(after, 'web', 'helper'), isHeld);
  clock.advance(3 * H);
  await liftDueHolds(loopDeps(after));
  assert.equal((await statusOf(fh, clock.now()))?.hold, null);
});

test('a hold that expired while no helper ran is lifted at the start, recorded with the time of the lift', async (t) => {
  const fh = await host(t);
  const put = await hold(fh.context(undefined, manualClock()), 'weekend', H);
  // The helper was down from T0 + 10m to T0 + 3h.
  const ctx = fh.context(undefined, manualClock(T0 + 3 * H));
  await liftDueHolds(loopDeps(ctx));
  const st = await statusOf(fh, T0 + 3 * H);
  assert.equal(st?.hold, null);
  assert.deepEqual(st?.holdLifted, { ...put.hold, liftedAt: T0 + 3 * H, how: 'expired' });
  await preflight(ctx, 'web', 'helper');
});

test('a wall clock set forward past a hold\u2019s until is noticed within the recheck bound, not at the old sleep\u2019s end', async (t) => {
  const fh = await host(t);
  const clock = manualClock();
  const ctx = fh.context(undefined, clock);
  await hold(ctx, 'long', 2 * 24 * H);
  const loop = new HoldExpiry(loopDeps(ctx));
  t.after(() => loop.close());
  loop.start();
  await asleep(clock);
  clock.jump(3 * 24 * H);
  clock.advance(RECHECK_MS);
  await asleep(clock);
  assert.equal((await statusOf(fh, clock.now()))?.hold, null);
});

test('a hold without --until, and every admin.sock hold (stop, rollback, update), has no expiry and is never lifted by the helper', async (t) => {
  const fh = await host(t);
  const clock = manualClock();
  const ctx = fh.context(undefined, clock);
  const put = await hold(ctx, 'until further notice');
  assert.equal(put.hold.until, null);
  clock.advance(400 * 24 * H);
  await liftDueHolds(loopDeps(ctx));
  assert.equal((await statusOf(fh, clock.now()))?.hold?.until, null);

  // A hold with an expiry, then a stop: the stop's hold replaces it, and has none.
  await hold(ctx, 'short', M);
  await setHold(ctx, 'web', admin, 'stop');
  clock.advance(H);
  await liftDueHolds(loopDeps(ctx));
  const st = await statusOf(fh, clock.now());
  assert.equal(st?.hold?.reason, 'stop');
  assert.equal(st?.hold?.until, null);
});

test('a hold replaces the hold the app had and says which', async (t) => {
  const fh = await host(t);
  const ctx = fh.context(undefined, manualClock());
  const first = await hold(ctx, 'first', H);
  const second = await hold(ctx, 'second', 2 * H);
  assert.deepEqual(second.replaced, first.hold);
  assert.notEqual(second.hold.at, first.hold.at, 'a new hold never has the at of the one it replaces');
  assert.equal((await statusOf(fh, T0))?.hold?.until, second.hold.at + 2 * H);
});

test('release-hold clears a hold with an expiry and records who released it', async (t) => {
  const fh = await host(t);
  const clock = manualClock();
  const ctx = fh.context(undefined, clock);
  const put = await hold(ctx, 'freeze', H);
  clock.advance(5 * M);
  const r = await releaseHold(ctx, 'web', admin);
  assert.deepEqual(r, { app: 'web', released: true, hold: put.hold });
  const st = await statusOf(fh, clock.now());
  assert.equal(st?.hold, null);
  assert.equal(st?.holdLifted?.how, 'released');
  assert.equal(st?.holdLifted?.liftedAt, T0 + 5 * M);
  assert.match(st?.holdLifted?.releasedBy ?? '', /over admin\.sock/);
  assert.deepEqual(await releaseHold(ctx, 'web', admin), { app: 'web', released: false, hold: null }, 'nothing to clear is success');
  clock.advance(H);
  assert.deepEqual(await liftExpiredHold(ctx, 'web', clock.now()), { next: null }, 'nothing left to lift');
});

test('the state file a hold with an expiry writes is one an older steward reads: its hold has only by, reason and at', async (t) => {
  const fh = await host(t);
  await hold(fh.context(undefined, manualClock()), 'freeze', H);
  const raw = JSON.parse(readFileSync(stateFile(fh.paths, 'web'), 'utf8'));
  assert.deepEqual(Object.keys(raw.hold).sort(), ['at', 'by', 'reason']);
  assert.ok(appStateSchema.safeParse(raw).success, 'the state schema every release since the first reads');
  assert.equal(raw.schemaVersion, 1);
  const side = JSON.parse(readFileSync(holdFile(fh.paths, 'web'), 'utf8'));
  assert.equal(side.schemaVersion, 1);
  assert.equal(side.expiry.until, T0 + H);
});

test('an old-shaped hold (a state file with {by, at, reason} and no hold file) reads as a hold until release-hold', async (t) => {
  const fh = await host(t);
  const old = { schemaVersion: 1, previous: null, highestActive: '1.0.0', quarantine: {}, hold: { by: 'root (uid 0) over admin.sock', at: T0 - H, reason: 'rollback to 1.0.0' }, blocked: null };
  writeFileSync(stateFile(fh.paths, 'web'), JSON.stringify(old));
  const st = await statusOf(fh, T0);
  assert.deepEqual(st?.hold, { ...old.hold, until: null });
  assert.equal(st?.holdLifted, null);
  const ctx = fh.context(undefined, manualClock(T0 + 1000 * H));
  assert.equal(await liftDueHolds(loopDeps(ctx)), RECHECK_MS);
  await assert.rejects(preflight(ctx, 'web', 'helper'), isHeld);
});

test('a hold file that does not read gives no hold an expiry: the hold stands (it holds longer, never shorter)', async (t) => {
  const fh = await host(t);
  const ctx = fh.context(undefined, manualClock());
  await hold(ctx, 'freeze', M);
  writeFileSync(holdFile(fh.paths, 'web'), '{"schemaVersion":1,"app":"web","expiry":');
  assert.equal(await readHoldFile(fh.paths, 'web'), null);
  const later = fh.context(undefined, manualClock(T0 + H));
  await liftDueHolds(loopDeps(later));
  assert.equal((await statusOf(fh, T0 + H))?.hold?.until, null);
  await assert.rejects(preflight(later, 'web', 'helper'), isHeld);
  // A newer steward's file is refused the same way.
  writeFileSync(holdFile(fh.paths, 'web'), JSON.stringify({ schemaVersion: 2, app: 'web', expiry: null, lifted: null }));
  assert.equal(await readHoldFile(fh.paths, 'web'), null);
});

test('a write that fails after the expiry is written and before the hold leaves the app as it was', async (t) => {
  const fh = await host(t);
  // The second rename of a state file: the hold file's is the first.
  const ctx = fh.context('eio:rename:state@2', manualClock());
  await assert.rejects(hold(ctx, 'freeze', H), /input\/output error/);
  assert.deepEqual(ctx.fired, ['rename:state']);
  assert.equal((await readAppState(fh.paths, 'web')).hold, null, 'no hold');
  assert.equal((await statusOf(fh, T0))?.hold, null);
  // A later hold without an expiry does not take the orphan expiry.
  const put = await hold(fh.context(undefined, manualClock()), 'no expiry');
  assert.equal(put.hold.until, null);
  assert.equal((await statusOf(fh, T0))?.hold?.until, null);
});

test('a lift that fails between its record and the state leaves the hold, and the next look lifts it', async (t) => {
  const fh = await host(t);
  const put = await hold(fh.context(undefined, manualClock()), 'freeze', M);
  const failing = fh.context('eio:rename:state@2', manualClock(T0 + H));
  await assert.rejects(liftExpiredHold(failing, 'web', T0 + H), /input\/output error/);
  assert.deepEqual((await statusOf(fh, T0 + H))?.hold, put.hold, 'still held, expiry and all');
  const ctx = fh.context(undefined, manualClock(T0 + 2 * H));
  await liftDueHolds(loopDeps(ctx));
  assert.equal((await statusOf(fh, T0 + 2 * H))?.hold, null);
});

test('the helper refuses a hold with a blank reason, and one on an app that is busy, changing nothing', async (t) => {
  const fh = await host(t);
  const ctx = fh.context(undefined, manualClock());
  await assert.rejects(hold(ctx, '   '), (err: unknown) => err instanceof StewardError && err.code === 'BAD_REQUEST' && /empty/.test(err.message));
  const busy = ctx.locks.tryAcquire('web', { attemptId: 'a1', op: 'update', phase: 'probe', startedAt: T0 });
  await assert.rejects(hold(ctx, 'freeze', H), (err: unknown) => err instanceof StewardError && err.code === 'BUSY');
  assert.deepEqual(await liftExpiredHold(ctx, 'web', T0), { busy: true });
  busy.release();
  assert.equal((await readAppState(fh.paths, 'web')).hold, null);
  await assert.rejects(putHold(ctx, { v: 1, id: 1, op: 'hold', app: 'nope', reason: 'x' }, admin), (err: unknown) => err instanceof StewardError && err.code === 'UNKNOWN_APP');
});
