import { escapeControlChars } from '../../core/control-chars.js';
import { StewardError } from '../../core/errors.js';
import { holdReasonProblem, type HoldLift, type HoldView } from '../../core/hold-limits.js';
import type { AppState } from '../../core/state-schemas.js';
import { logger } from '../../platform/log.js';
import { lookupUserById } from '../../platform/users.js';
import { requireApp } from '../../host/config.js';
import type { HoldAnswer, ReleaseHoldAnswer } from '../../protocol/answers.js';
import type { HoldRequest } from '../../protocol/schemas.js';
import type { AppLocks, HeldLock } from '../app-locks.js';
import { holdViewOf, nextHoldFile, readHoldFile, writeHoldFile } from '../holds/hold-file.js';
import type { OpContext } from '../server/api-server.js';
import { readAppState, writeAppState } from '../state/app-state.js';
import type { UpdateContext } from '../update/context.js';

const log = logger('helper:hold');

// Who a hold names (docs/design.md §4): the peer's credentials as the kernel recorded them at connect
// (SO_PEERCRED), never what the request says, e.g. "alice (uid 1001) over helper.sock". Without
// them (no perl, the client already gone), the socket says as much as is known: who may open it.
export async function holderOf(op: Pick<OpContext, 'kind' | 'peer'>): Promise<string> {
  const sock = `${op.kind}.sock`;
  const got = await op.peer();
  if (!got.ok) {
    const who = op.kind === 'helper' ? 'a member of group steward' : process.getuid?.() === 0 ? 'root' : `uid ${process.getuid?.()}`;
    return `${who} over ${sock} (peer unknown: ${got.why})`;
  }
  const { uid } = got.peer;
  const name = (await lookupUserById(uid).catch(() => null))?.name;
  return `${name ? `${name} (uid ${uid})` : `uid ${uid}`} over ${sock}`;
}

// A new hold's `at`: now, but never the `at` of the hold it replaces, so that an expiry written
// for the old one (holds/hold-file.ts names a hold by its by, reason and at) never applies to it.
function newHoldAt(now: number, before: AppState['hold']): number {
  return before && before.at === now ? now + 1 : now;
}

// Puts a hold {by, at, reason} on the app (docs/design.md §4): an operator acted, so helper.sock
// requests that would change the app are refused until release-hold (admin.sock). `by` is
// the peer of `op`'s connection. `state` is the app's state as the caller read it under the
// app's lock (read here when not given); the state written is returned. The hold has no expiry.
export async function setHold(ctx: UpdateContext, app: string, op: Pick<OpContext, 'kind' | 'peer'>, reason: string, state?: AppState): Promise<AppState> {
  const by = await holderOf(op);
  const before = state ?? (await readAppState(ctx.paths, app));
  const held = { ...before, hold: { by: escapeControlChars(by).slice(0, 256), reason: escapeControlChars(reason).slice(0, 512), at: newHoldAt(ctx.clock.now(), before.hold) } };
  await writeAppState(ctx.paths, app, held);
  return held;
}

// `hold` (admin.sock only, docs/design.md §18): the host's own hold on the app, with the operator's
// reason and, with `forMs`, an expiry, at which the helper lifts it (holds/hold-expiry.ts). It
// replaces any hold the app had. The expiry is written first: until the state names the new hold,
// the expiry names no hold, so a crash between the two leaves the app as it was.
export async function putHold(ctx: UpdateContext & { locks: AppLocks }, req: HoldRequest, op: Pick<OpContext, 'kind' | 'peer'>): Promise<HoldAnswer> {
  requireApp(ctx.config, req.app);
  const problem = holdReasonProblem(req.reason);
  if (problem) throw new StewardError('BAD_REQUEST', `the reason to hold ${req.app} ${problem}`);
  const by = escapeControlChars(await holderOf(op)).slice(0, 256);
  const lock = await ctx.locks.acquire(req.app, { attemptId: 'hold', op: 'hold', phase: 'write', startedAt: ctx.clock.now() });
  try {
    const state = await readAppState(ctx.paths, req.app);
    const file = await readHoldFile(ctx.paths, req.app);
    const replaced = holdViewOf(state.hold, file);
    const hold = { by, reason: req.reason, at: newHoldAt(ctx.clock.now(), state.hold) };
    const until = req.forMs === undefined ? null : hold.at + req.forMs;
    // Without an expiry, an old one is dropped first: none may ever name the new hold.
    if (until !== null || file?.expiry) await writeHoldFile(ctx.paths, nextHoldFile(req.app, file, { expiry: until === null ? null : { ...hold, until } }), ctx.faults);
    await writeAppState(ctx.paths, req.app, { ...state, hold }, ctx.faults);
    log('hold app=%s by=%s until=%s reason=%s', req.app, by, until === null ? 'release-hold' : new Date(until).toISOString(), JSON.stringify(req.reason));
    return { app: req.app, hold: { ...hold, until }, replaced };
  } finally {
    lock.release();
  }
}

// `release-hold` (admin.sock only): clears the hold and records it as the app's last hold lifted
// (`how: released`, by the peer). Nothing to clear is success.
export async function releaseHold(ctx: UpdateContext & { locks: AppLocks }, app: string, op?: Pick<OpContext, 'kind' | 'peer'>): Promise<ReleaseHoldAnswer> {
  requireApp(ctx.config, app);
  const releasedBy = op ? escapeControlChars(await holderOf(op)).slice(0, 256) : undefined;
  const held = await ctx.locks.acquire(app, { attemptId: 'release-hold', op: 'release-hold', phase: 'write', startedAt: ctx.clock.now() });
  try {
    const state = await readAppState(ctx.paths, app);
    if (!state.hold) return { app, released: false, hold: null };
    const file = await readHoldFile(ctx.paths, app);
    const view = holdViewOf(state.hold, file) as HoldView;
    await writeAppState(ctx.paths, app, { ...state, hold: null }, ctx.faults);
    const lifted: HoldLift = { ...view, liftedAt: ctx.clock.now(), how: 'released', ...(releasedBy ? { releasedBy } : {}) };
    // The record only: the hold is gone whether it is written or not.
    await writeHoldFile(ctx.paths, nextHoldFile(app, file, { lifted }), ctx.faults).catch((err) => log('WARNING: app=%s the release of its hold is not recorded: %s', app, (err as Error).message));
    log('hold released app=%s by=%s (the hold of %s: %s)', app, releasedBy ?? 'unknown', view.by, JSON.stringify(view.reason));
    return { app, released: true, hold: view };
  } finally {
    held.release();
  }
}

// What liftExpiredHold did: lifted the hold (`lifted`), found none due (`next`: the expiry still
// ahead, or null when the app's hold has none or there is no hold), or could not take the app's
// lock (`busy`: try again soon).
export type LiftResult = { lifted: HoldLift } | { next: number | null } | { busy: true };

// Lifts the app's hold if its expiry is at or before `now` (docs/design.md §18). The lift is
// recorded first (state/<app>.hold.json's `lifted`, the expiry kept), then the hold cleared: a
// crash between the two leaves an expired hold, which the next start lifts again. Idempotent.
export async function liftExpiredHold(ctx: UpdateContext & { locks: AppLocks }, app: string, now: number): Promise<LiftResult> {
  let lock: HeldLock;
  try {
    lock = ctx.locks.tryAcquire(app, { attemptId: 'hold-expiry', op: 'hold-expiry', phase: 'write', startedAt: now });
  } catch (err) {
    if (err instanceof StewardError && (err.code === 'BUSY' || err.code === 'HANDOVER')) return { busy: true };
    throw err;
  }
  try {
    const state = await readAppState(ctx.paths, app);
    const file = await readHoldFile(ctx.paths, app);
    const view = holdViewOf(state.hold, file);
    if (!view || view.until === null) return { next: null };
    if (view.until > now) return { next: view.until };
    const lifted: HoldLift = { ...view, liftedAt: now, how: 'expired' };
    await writeHoldFile(ctx.paths, nextHoldFile(app, file, { lifted }), ctx.faults);
    await writeAppState(ctx.paths, app, { ...state, hold: null }, ctx.faults);
    log('hold expired app=%s by=%s until=%s reason=%s: lifted, the control plane may change the app again', app, view.by, new Date(view.until).toISOString(), JSON.stringify(view.reason));
    return { lifted };
  } finally {
    lock.release();
  }
}
