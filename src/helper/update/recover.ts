import { isDiskFull, truncateUtf8 } from '../../core/errors.js';
import { isTerminal } from '../../core/journal-schema.js';
import type { Journal } from '../../core/journal-schema.js';
import { logger } from '../../platform/log.js';
import { readMarker } from '../release-store.js';
import { readAppState, writeAppState } from '../state/app-state.js';
import { readReleaseOf, stopApp } from './app-process.js';
import { startAndProbe } from './start-and-probe.js';
import { blockApp, emitFor } from './activate.js';
import type { UpdateContext } from './context.js';
import { readJournal, syncJournal, writeJournal } from './journal.js';
import { pointCurrent, removeCurrent, removeStrayCurrentLinks } from './swap.js';
import { UNHEALTHY_AFTER_ACTIVATION } from './watch-window.js';

const log = logger('helper:recover');

// Blocks that mean "an activation was left without a durable verdict": recovery resolves them.
const BLOCKS_CLEARED_BY_RECOVERY = new Set(['DISK_FULL', 'ACTIVATION_INTERRUPTED']);

export type RecoveryOutcome =
  | { app: string; action: 'none' }
  | { app: string; action: 'blocked'; reason: string; message: string }
  | { app: string; action: 'recovered'; journal: Journal }
  | { app: string; action: 'receipt-reemitted'; attemptId: string };

// At the helper's start (docs/design.md §4), for one app: validate the journal; recover an
// interrupted activation; re-emit the receipt of a terminal journal whose receipt is missing.
export async function recoverApp(ctx: UpdateContext, app: string): Promise<RecoveryOutcome> {
  await removeStrayCurrentLinks(ctx.paths, app);
  const read = await readJournal(ctx.paths, app);
  if (read.state === 'absent') return { app, action: 'none' };
  if (read.state === 'invalid') {
    // Never rewritten until `agentctl recover`: the operator must look at it.
    const state = await readAppState(ctx.paths, app).catch(() => null);
    await blockApp(ctx, app, state, 'JOURNAL_INVALID', read.why);
    return { app, action: 'blocked', reason: 'JOURNAL_INVALID', message: read.why };
  }
  const j = read.journal;
  if (isTerminal(j.outcome)) {
    await clearVerdictBlock(ctx, app, j);
    if (await ctx.receipts.find(app, j.attemptId)) return { app, action: 'none' };
    await emitFor(ctx, j);
    log('re-emitted receipt app=%s attempt=%s', app, j.attemptId);
    return { app, action: 'receipt-reemitted', attemptId: j.attemptId };
  }
  // Where a handover was (docs/design.md §17) changes nothing here: every process of the app is
  // stopped and the version `current` goes back to is started, on the sockets its keeper still
  // holds (or a new keeper binds after a power cut). The outcome names no handover.
  const { handover, ...activating } = j;
  if (handover) log('app=%s attempt=%s was in the handover (%s) from pid %d%s', app, j.attemptId, handover.phase, handover.old.pid, handover.new ? ` to pid ${handover.new.pid}` : '');
  return recoverInterrupted(ctx, activating).catch((err) => blockUnrecovered(ctx, activating, err));
}

// The recovery itself failed (its first write on a disk still full, say): the journal still
// says `activating`, so the app is blocked, in memory at least, and no request acts on it until
// a start recovers it or an operator runs `agentctl recover`.
async function blockUnrecovered(ctx: UpdateContext, j: Journal, err: unknown): Promise<RecoveryOutcome> {
  const reason = isDiskFull(err) ? 'DISK_FULL' : 'ACTIVATION_INTERRUPTED';
  const message = `${j.app}: the recovery of ${j.attemptId} failed: ${(err as Error).message}`;
  log('recovery failed app=%s attempt=%s blocked=%s: %s', j.app, j.attemptId, reason, (err as Error).message);
  await blockApp(ctx, j.app, await readAppState(ctx.paths, j.app).catch(() => null), reason, message);
  return { app: j.app, action: 'blocked', reason, message };
}

// An activation whose verdict never became durable: stop every process of the app, point
// `current` back at fromVersion (or remove it after a first install), start and probe it,
// and record rolled-back (ACTIVATION_INTERRUPTED) or failed. A missing or invalid previous
// tree blocks the app.
async function recoverInterrupted(ctx: UpdateContext, j: Journal): Promise<RecoveryOutcome> {
  const { app } = j;
  log('recovering app=%s attempt=%s from=%s target=%s', app, j.attemptId, j.fromVersion, j.targetVersion);
  await restorePriorState(ctx, j);
  await stopApp(ctx, app);
  let ended: Journal;
  if (j.fromVersion === null) {
    await removeCurrent(ctx.paths, app);
    ended = {
      ...j,
      outcome: 'failed',
      updatedAt: ctx.clock.now(),
      reason: { code: 'ACTIVATION_INTERRUPTED', message: `${app} ${j.targetVersion}: the first install was interrupted; nothing is installed` },
    };
  } else {
    const marker = await readMarker(ctx.paths, app, j.fromVersion);
    if (!marker) {
      const message = `${app}: the activation of ${j.targetVersion} was interrupted and ${j.fromVersion} is missing or invalid`;
      const state = await readAppState(ctx.paths, app);
      await blockApp(ctx, app, state, 'RELEASE_INVALID', message);
      return { app, action: 'blocked', reason: 'RELEASE_INVALID', message };
    }
    await pointCurrent(ctx.paths, app, j.fromVersion, ctx.faults, 'back');
    let healthy: boolean;
    let why = '';
    try {
      const r = await startAndProbe(ctx, app, j.fromVersion, await readReleaseOf(ctx, app, j.fromVersion), j.attemptId);
      healthy = r.ok;
      if (!r.ok) why = r.reason;
    } catch (err) {
      healthy = false;
      why = (err as Error).message;
    }
    ended = {
      ...j,
      outcome: healthy ? 'rolled-back' : 'failed',
      updatedAt: ctx.clock.now(),
      rollbackHealthy: healthy,
      reason: healthy
        ? j.reason?.code === UNHEALTHY_AFTER_ACTIVATION
          ? // The watch window's rollback (activate.ts rollBackUnhealthy), finished here: its reason stands.
            { code: UNHEALTHY_AFTER_ACTIVATION, message: truncateUtf8(`${app} ${j.targetVersion}: ${j.reason.message}; rolled back to ${j.fromVersion} at the helper's start`, 2048) }
          : { code: 'ACTIVATION_INTERRUPTED', message: `${app}: the activation of ${j.targetVersion} was interrupted; back on ${j.fromVersion}` }
        : {
            code: 'ROLLBACK_UNHEALTHY',
            message: truncateUtf8(`${app}: the activation of ${j.targetVersion} was interrupted and ${j.fromVersion} is unhealthy: ${why}`, 512),
          },
    };
  }
  try {
    await writeJournal(ctx.paths, ended, ctx.faults);
  } catch (err) {
    const state = await readAppState(ctx.paths, app).catch(() => null);
    await blockApp(ctx, app, state, 'DISK_FULL', `recovery verdict not written: ${(err as Error).message}`);
    return { app, action: 'blocked', reason: 'DISK_FULL', message: (err as Error).message };
  }
  // A block that only stood for "the verdict could not be written" ends with this verdict.
  const state = await readAppState(ctx.paths, app).catch(() => null);
  if (state?.blocked && BLOCKS_CLEARED_BY_RECOVERY.has(state.blocked.reason)) {
    await writeAppState(ctx.paths, app, { ...state, blocked: null }, ctx.faults).catch((err) => log('could not clear blocked app=%s: %s', app, (err as Error).message));
  }
  await emitFor(ctx, ended);
  return { app, action: 'recovered', journal: ended };
}

// A terminal journal under a block that stood for "the verdict could not be written": the write
// failed after its rename (a folder fsync), so the verdict is there after all. Made durable now,
// it ends the block; left in place, nothing would ever clear it.
async function clearVerdictBlock(ctx: UpdateContext, app: string, j: Journal): Promise<void> {
  const state = await readAppState(ctx.paths, app).catch(() => null);
  if (!state?.blocked || !BLOCKS_CLEARED_BY_RECOVERY.has(state.blocked.reason)) return;
  try {
    await syncJournal(ctx.paths, app);
    await writeAppState(ctx.paths, app, { ...state, blocked: null }, ctx.faults);
    log('cleared block app=%s reason=%s: the verdict of %s is durable', app, state.blocked.reason, j.attemptId);
  } catch (err) {
    log('could not clear block app=%s: %s', app, (err as Error).message);
  }
}

// The verdict never became durable, so nothing it wrote to state stands: put back previous,
// the highest active version and the target's quarantine as they were before the attempt.
async function restorePriorState(ctx: UpdateContext, j: Journal): Promise<void> {
  if (!j.prior) return;
  const state = await readAppState(ctx.paths, j.app);
  const { [j.targetVersion]: _dropped, ...others } = state.quarantine;
  const quarantine = j.prior.quarantine ? { ...others, [j.targetVersion]: j.prior.quarantine } : others;
  await writeAppState(ctx.paths, j.app, { ...state, previous: j.prior.previous, highestActive: j.prior.highestActive, quarantine }, ctx.faults);
}
