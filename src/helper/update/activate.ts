import { isDiskFull, StewardError, truncateUtf8 } from '../../core/errors.js';
import { JOURNAL_SCHEMA_VERSION, type Journal } from '../../core/journal-schema.js';
import { nextQuarantine } from '../../core/quarantine.js';
import type { AppState } from '../../core/state-schemas.js';
import { compareVersions } from '../../core/version.js';
import { commitInOrder } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';
import type { Progress } from '../../protocol/progress.js';
import { readMarker } from '../release-store.js';
import { readRunRecord } from '../runners/run-record.js';
import { prepareAppState, readAppState, writeAppState } from '../state/app-state.js';
import { readReleaseOf, stopApp } from './app-process.js';
import type { StoredReceipt, UpdateContext } from './context.js';
import { prepareJournal, readJournal, removeJournal, writeJournal, type JournalRead } from './journal.js';
import { keepFailedLog } from './keep-failed-log.js';
import { pruneReleases } from './prune.js';
import type { ProbeResult } from './probe.js';
import { startAndProbe, type StartHooks } from './start-and-probe.js';
import { handOver, type HandoverResult } from './handover.js';
import type { ReleaseFile } from '../../core/release-schemas.js';
import { pointCurrent, removeCurrent } from './swap.js';
import { resetSignalCounts } from '../supervisor/app-signals.js';
import { removeExits } from '../supervisor/exits-since-activation.js';
import type { AuthorizedDowngrade } from '../stage/verify-downgrade.js';
import { causeOf, DEFAULT_WATCH_MAX_RESTARTS, removeWatch, UNHEALTHY_AFTER_ACTIVATION, WATCH_SCHEMA_VERSION, windowLength, writeWatch, type WatchWindow } from './watch-window.js';

const log = logger('helper:update');

export interface ActivateInput {
  app: string;
  attemptId: string;
  fromVersion: string | null;
  targetVersion: string;
  startedAt: number;
  // The app's state as the caller read it under the app's lock; read here when not given.
  state?: AppState;
  progress: (p: Progress) => void;
  // Resolves once journal{activating} is durable (for --no-wait).
  onAccepted?: () => void;
  // An update's watch window after `active` (docs/design.md §17): `watchMs` the control plane asks
  // for, over the release's. Absent: no window (a rollback, a recover).
  watch?: { watchMs: number | undefined };
  // A signed downgrade authorization let this update go below the highest active version
  // (docs/design.md §18): an `active` verdict lowers that floor to the target, and its receipt's
  // reason (DOWNGRADE_AUTHORIZED) names the key. Any other verdict leaves the floor as it was.
  downgrade?: AuthorizedDowngrade;
}

export interface ActivateResult {
  journal: Journal;
  receipt: StoredReceipt | null;
}

function reasonOf(code: string, message: string) {
  return { code, message: truncateUtf8(message, 512) };
}

// The reason an authorized downgrade's `active` journal and receipt carry: the floor it went
// below, and the key that allowed it (every receipt version carries a reason, and recovery
// re-emits it from the journal).
export function downgradeReason(app: string, target: string, d: AuthorizedDowngrade) {
  return reasonOf(DOWNGRADE_AUTHORIZED, `${app} ${target} went below ${d.below}, the highest version that was active here, by ${d.by ?? `the downgrade authorization of key ${d.keyId}`} (valid until ${new Date(d.notAfter).toISOString()})`);
}

export const DOWNGRADE_AUTHORIZED = 'DOWNGRADE_AUTHORIZED';

// The update transaction of docs/design.md §4 from the journal on: stop old, swap, start new,
// probe; on success state, journal{active}, receipt, prune; on failure stop new, swap
// back, start old, probe old, quarantine, journal{rolled-back|failed}, receipt.
// The caller holds the app's lock and has checked the preconditions.
export async function activate(ctx: UpdateContext, input: ActivateInput): Promise<ActivateResult> {
  const { app, attemptId, fromVersion: from, targetVersion: target } = input;
  const { paths, faults, clock } = ctx;
  const marker = await readMarker(paths, app, target);
  if (!marker) throw new StewardError('RELEASE_INVALID', `${app} ${target} is not staged with a valid marker`);
  const targetRelease = await readReleaseOf(ctx, app, target);
  const state0 = input.state ?? (await readAppState(paths, app));
  const priorJournal = await readJournal(paths, app);

  const journal: Journal = {
    schemaVersion: JOURNAL_SCHEMA_VERSION,
    attemptId,
    app,
    fromVersion: from,
    targetVersion: target,
    integrity: marker.tarballIntegrity,
    outcome: 'activating',
    startedAt: input.startedAt,
    updatedAt: clock.now(),
    prior: { previous: state0.previous, highestActive: state0.highestActive, quarantine: state0.quarantine[target] ?? null },
  };
  try {
    await writeJournal(paths, journal, faults);
  } catch (err) {
    return journalNotWritten(ctx, input, state0, priorJournal, err);
  }
  input.onAccepted?.();
  faults.hit('after-journal-activating');
  // A later activation ends the window of the one before, and starts the count of exits again
  // (docs/design.md §17).
  await removeWatch(paths, app).catch((err) => log('could not remove the watch window app=%s: %s', app, (err as Error).message));
  await removeExits(paths, app).catch((err) => log('could not remove the count of exits app=%s: %s', app, (err as Error).message));
  await resetSignalCounts(paths, app, clock.now()).catch((err) => log('could not reset the signal counts app=%s: %s', app, (err as Error).message));

  let verdict: Verdict;
  const hooks = { afterStart: () => faults.hit('after-start-new'), onProbe: () => faults.hit('during-probe') };
  try {
    if (from !== null && (await canHandOver(ctx, app, targetRelease))) {
      // An app with sockets: the new version starts beside the old (handover.ts).
      input.progress({ attemptId, phase: 'swap' });
      await pointCurrent(paths, app, target, faults, 'forward');
      input.progress({ attemptId, phase: 'handover' });
      const handed = await handOver(ctx, app, target, targetRelease, journal, hooks);
      verdict = handed ?? (await stopThenStart(ctx, input, targetRelease, hooks));
    } else {
      input.progress({ attemptId, phase: 'stop-old' });
      await stopApp(ctx, app, { startsNext: true });
      faults.hit('after-stop-old');
      input.progress({ attemptId, phase: 'swap' });
      await pointCurrent(paths, app, target, faults, 'forward');
      input.progress({ attemptId, phase: 'start' });
      verdict = await startAndProbe(ctx, app, target, targetRelease, attemptId, hooks);
    }
  } catch (err) {
    // Any failure on the way forward is a failed activation: undo it like a failed probe.
    verdict = { ok: false, reason: `the activation failed: ${(err as Error).message}` };
  }

  if (verdict.ok) {
    const highest = !input.downgrade && state0.highestActive && compareVersions(state0.highestActive, target) > 0 ? state0.highestActive : target;
    const { [target]: _cleared, ...quarantine } = state0.quarantine;
    const done: Journal = { ...journal, outcome: 'active', updatedAt: clock.now(), ...(input.downgrade ? { reason: downgradeReason(app, target, input.downgrade) } : {}) };
    // The watch window is durable before the verdict: it counts only once the journal says
    // `active` for this attempt, so a crash in between leaves none open for a version not active.
    const watchMs = input.watch && from !== null && from !== target ? windowLength(ctx, app, targetRelease, input.watch.watchMs) : 0;
    if (watchMs > 0 && from !== null) {
      const now = clock.now();
      const w: WatchWindow = {
        schemaVersion: WATCH_SCHEMA_VERSION,
        app,
        attemptId,
        version: target,
        fromVersion: from,
        openedAt: now,
        until: now + watchMs,
        maxRestarts: targetRelease.health?.watchMaxRestarts ?? DEFAULT_WATCH_MAX_RESTARTS,
        restarts: 0,
        prior: { previous: state0.previous, highestActive: state0.highestActive },
      };
      await writeWatch(paths, w).catch((err) => log('WARNING: no watch window app=%s version=%s: %s', app, target, (err as Error).message));
    }
    try {
      // Highest active version and previous are durable before the journal says active.
      faults.write('verdict');
      // Re-activating the current version (`recover`) is not a move away from it: previous stays.
      const previous = from !== null && from !== target ? from : state0.previous;
      await writeVerdict(ctx, { ...state0, previous, highestActive: highest, quarantine }, done, () => faults.hit('after-verdict-state'));
    } catch (err) {
      verdict = { ok: false, reason: `the verdict could not be written: ${(err as Error).message}` };
    }
    if (verdict.ok) {
      faults.hit('after-verdict-before-receipt');
      const receipt = await emitFor(ctx, done);
      faults.hit('after-receipt-before-prune');
      await pruneReleases(ctx, app).catch((err) => log('prune failed app=%s: %s', app, (err as Error).message));
      return { journal: done, receipt };
    }
  }

  try {
    return await undoActivation(ctx, input, journal, state0, verdict);
  } catch (err) {
    if (err instanceof StewardError && err.details.blockedBy === 'DISK_FULL') throw err;
    // The way back failed too: the journal still says `activating`; block the app so that
    // nothing else touches it until the next start recovers it (or an operator does). On a full
    // disk the way back fails at its first write, before its verdict: the block names the disk.
    const blockedBy = isDiskFull(err) ? 'DISK_FULL' : 'ACTIVATION_INTERRUPTED';
    await blockApp(ctx, app, state0, blockedBy, `the rollback of ${attemptId} failed: ${(err as Error).message}`);
    throw new StewardError('IO_ERROR', `${app}: ${verdict.reason}; and the rollback failed: ${(err as Error).message}; the app is blocked (${blockedBy})`, {
      cause: err,
      details: { attemptId, blockedBy },
    });
  }
}

// The `activating` journal could not be written. If its rename never happened, nothing changed:
// a refusal. If it did (a folder fsync failed after it), the journal may say `activating`
// although the caller is told the attempt failed: put the journal before it back, and it is a
// refusal again. If even that fails, the attempt has begun as far as the disk knows: the app is
// blocked and the next start recovers it, and `onAccepted` keeps a `refused` receipt from taking
// the attemptId that recovery's receipt needs.
async function journalNotWritten(ctx: UpdateContext, input: ActivateInput, state0: AppState, prior: JournalRead, err: unknown): Promise<never> {
  const { app, attemptId } = input;
  const code = (err as NodeJS.ErrnoException).code === 'ENOSPC' ? 'DISK_FULL' : 'IO_ERROR';
  const refusal = new StewardError(code, `${app}: could not write the journal: ${(err as Error).message}`, { cause: err });
  const now = await readJournal(ctx.paths, app).catch(() => null);
  if (!(now?.state === 'ok' && now.journal.attemptId === attemptId)) throw refusal;
  try {
    if (prior.state === 'ok') await writeJournal(ctx.paths, prior.journal, ctx.faults);
    else if (prior.state === 'absent') await removeJournal(ctx.paths, app);
    else throw new Error('the journal before it was invalid');
  } catch (undoErr) {
    input.onAccepted?.();
    const why = `the journal of ${attemptId} may say activating (${(err as Error).message}) and could not be put back (${(undoErr as Error).message})`;
    await blockApp(ctx, app, state0, 'ACTIVATION_INTERRUPTED', why);
    throw new StewardError('IO_ERROR', `${app}: ${why}; the app is blocked until the helper's next start recovers it`, { cause: err, details: { attemptId } });
  }
  throw refusal;
}

export interface UnhealthyRollbackInput {
  app: string;
  attemptId: string;
  startedAt: number;
  state: AppState;
  progress: (p: Progress) => void;
  onAccepted?: () => void;
  window: WatchWindow;
  // The reason message (watch-window.ts unhealthyReason: it names the attempt undone).
  why: string;
}

// The watch window's rollback (docs/design.md §17): a new attempt that undoes the activation the
// window watched, as a failed activation is undone (the failed version's log kept, stopped,
// `current` back, the old version started and probed, the failed one quarantined), with reason
// UNHEALTHY_AFTER_ACTIVATION. Its journal is of the watched move (from the old version to the
// watched one), so an interrupted rollback is finished by recovery in the same direction.
// The caller holds the app's lock and checked that the window is still open.
export async function rollBackUnhealthy(ctx: UpdateContext, input: UnhealthyRollbackInput): Promise<ActivateResult> {
  const { app, attemptId, window: w } = input;
  const { paths, faults, clock } = ctx;
  const marker = await readMarker(paths, app, w.version);
  if (!marker) throw new StewardError('RELEASE_INVALID', `${app} ${w.version} is not staged with a valid marker`);
  if (!(await readMarker(paths, app, w.fromVersion))) throw new StewardError('RELEASE_INVALID', `${app} ${w.fromVersion} is not staged with a valid marker: nothing to roll back to`);
  const priorJournal = await readJournal(paths, app);
  // What state says once the rollback is done: `previous` as it was before the watched activation
  // (recovery of an interrupted rollback puts it back too). The highest active version stays the
  // watched one: it did reach `active`, and the floor against downgrades never goes down on the
  // host's own judgement (docs/design.md §17). After an authorized downgrade (§18) the watched
  // version is the lower one: the floor is then the version gone back to, which did run here.
  const h = input.state.highestActive;
  const highestActive = h !== null && compareVersions(h, w.fromVersion) >= 0 ? h : w.fromVersion;
  const state0: AppState = { ...input.state, previous: w.prior.previous, highestActive };
  const journal: Journal = {
    schemaVersion: JOURNAL_SCHEMA_VERSION,
    attemptId,
    app,
    fromVersion: w.fromVersion,
    targetVersion: w.version,
    integrity: marker.tarballIntegrity,
    outcome: 'activating',
    startedAt: input.startedAt,
    updatedAt: clock.now(),
    reason: reasonOf(UNHEALTHY_AFTER_ACTIVATION, input.why),
    prior: { previous: state0.previous, highestActive: state0.highestActive, quarantine: state0.quarantine[w.version] ?? null },
  };
  const activation = { app, attemptId, fromVersion: w.fromVersion, targetVersion: w.version, startedAt: input.startedAt, state: state0, progress: input.progress, ...(input.onAccepted ? { onAccepted: input.onAccepted } : {}) };
  try {
    await writeJournal(paths, journal, faults);
  } catch (err) {
    return journalNotWritten(ctx, activation, input.state, priorJournal, err);
  }
  input.onAccepted?.();
  await removeWatch(paths, app).catch((err) => log('could not remove the watch window app=%s: %s', app, (err as Error).message));
  await removeExits(paths, app).catch((err) => log('could not remove the count of exits app=%s: %s', app, (err as Error).message));
  await resetSignalCounts(paths, app, clock.now()).catch((err) => log('could not reset the signal counts app=%s: %s', app, (err as Error).message));
  log('rollback app=%s attempt=%s of %s to %s: %s', app, attemptId, w.version, w.fromVersion, input.why);
  return undoActivation(ctx, activation, journal, state0, { reason: input.why, code: UNHEALTHY_AFTER_ACTIVATION });
}

// The failure path: stop the new version, swap back, start and probe the old one, record
// the blame and the outcome, and emit the receipt.
async function undoActivation(ctx: UpdateContext, input: ActivateInput, journal: Journal, state0: AppState, verdict: { reason: string; code?: string; oldKept?: boolean }): Promise<ActivateResult> {
  const { app, attemptId, fromVersion: from, targetVersion: target } = input;
  const { paths, faults, clock } = ctx;
  // The code of the target's failure: its probe's own (AGENT_UNCONFIRMED), else unhealthy.
  const failedAs = verdict.code ?? 'REPLACEMENT_UNHEALTHY';
  // The new version failed: stop it before the old one starts, so it cannot hold a port.
  const record = await readRunRecord(paths, app).catch(() => null);
  const logFile = await keepFailedLog(paths, app, attemptId, record?.logOffset ?? 0, {
    runner: ctx.config.apps[app]?.runner === 'process' ? ctx.runner : undefined,
    sinceMs: record?.startedAt,
  });
  let outcome: Journal['outcome'];
  let reason;
  let rollbackHealthy: boolean | undefined;
  let blame: boolean;
  if (from && verdict.oldKept) {
    // A handover whose new version was never ready: the old process never stopped.
    input.progress({ attemptId, phase: 'swap-back' });
    await pointCurrent(paths, app, from, faults, 'back');
  }
  const fromRelease = from ? await readReleaseOf(ctx, app, from).catch(() => null) : null;
  // Back to the old version by a handover where one applies (the failed version still runs, and the
  // app has sockets): the failed one serves until the old one is ready.
  const handBack = from && !verdict.oldKept && fromRelease && (await canHandOver(ctx, app, fromRelease));
  if (!verdict.oldKept && !handBack) {
    input.progress({ attemptId, phase: 'stop-new' });
    await stopApp(ctx, app);
  }
  if (from && verdict.oldKept) {
    rollbackHealthy = true;
    blame = true;
    outcome = 'rolled-back';
    reason = reasonOf(failedAs, `${app} ${target}: ${verdict.reason}; ${from} kept serving`);
  } else if (from) {
    input.progress({ attemptId, phase: 'swap-back' });
    await pointCurrent(paths, app, from, faults, 'back');
    input.progress({ attemptId, phase: 'start-old' });
    const release = fromRelease ?? (await readReleaseOf(ctx, app, from));
    let old: ProbeResult | null = null;
    if (handBack) {
      const back: HandoverResult | null = await handOver(ctx, app, from, release, journal).catch((err) => ({ ok: false as const, reason: (err as Error).message, oldKept: true }));
      // No handover applied, or the old version was not ready beside the failed one: the plain
      // way (stop all, start it). Else its verdict is the rollback's.
      if (back && !back.oldKept) old = back;
      if (old === null) {
        input.progress({ attemptId, phase: 'stop-new' });
        await stopApp(ctx, app);
      }
    }
    old ??= await startAndProbe(ctx, app, from, release, attemptId);
    rollbackHealthy = old.ok;
    blame = old.ok;
    outcome = old.ok ? 'rolled-back' : 'failed';
    reason = old.ok
      ? reasonOf(failedAs, `${app} ${target}: ${verdict.reason}; rolled back to ${from}`)
      : reasonOf('ROLLBACK_UNHEALTHY', `${app} ${target}: ${verdict.reason}; ${from} failed too: ${old.reason}`);
  } else {
    // A failed first install leaves no `current` behind.
    await removeCurrent(paths, app);
    blame = false;
    outcome = 'failed';
    reason = reasonOf(failedAs, `${app} ${target}: ${verdict.reason}; first install, nothing to roll back to`);
  }
  const policy = ctx.config.apps[app]?.quarantine ?? { baseMs: 300_000, capMs: 86_400_000 };
  const q = nextQuarantine(state0, target, policy, clock.now(), blame);
  const ended: Journal = {
    ...journal,
    outcome,
    updatedAt: clock.now(),
    retryAfter: q.retryAfter,
    ...(rollbackHealthy !== undefined ? { rollbackHealthy } : {}),
    reason,
    ...(logFile ? { logFile } : {}),
  };
  try {
    faults.write('rollback-verdict');
    await writeVerdict(ctx, { ...state0, quarantine: { ...state0.quarantine, [target]: q } }, ended);
  } catch (err) {
    // Neither verdict is durable: block the app; the journal still says `activating`, so the
    // next start recovers it.
    await blockApp(ctx, app, state0, 'DISK_FULL', `the verdict of ${attemptId} could not be written: ${(err as Error).message}`);
    // Not DISK_FULL: that code means "refused, nothing changed", and here things did change.
    const what = (err as NodeJS.ErrnoException).code === 'ENOSPC' ? 'disk full' : 'I/O error';
    throw new StewardError('IO_ERROR', `${app}: ${what}: the outcome (${outcome}) could not be recorded (${(err as Error).message}); the app is blocked (DISK_FULL) until the helper restarts and recovers it`, {
      cause: err,
      details: { attemptId, blockedBy: 'DISK_FULL' },
    });
  }
  const receipt = await emitFor(ctx, ended);
  return { journal: ended, receipt };
}

type Verdict = HandoverResult;

// Whether an activation of the app may be a handover: it has sockets and the release says when it
// is ready (handover.ts decides the rest: whether anything of the app runs).
async function canHandOver(ctx: UpdateContext, app: string, release: ReleaseFile): Promise<boolean> {
  const cfg = ctx.config.apps[app];
  return cfg?.runner === 'process' && cfg.sockets !== undefined && release.start?.ready === 'fd' && ctx.runner.stopOne !== undefined;
}

// An app with sockets where no handover applied (handover.ts returned null): `current` already
// points at the target; stop what runs and start the target, its connections queued meanwhile.
async function stopThenStart(ctx: UpdateContext, input: ActivateInput, release: ReleaseFile, hooks: StartHooks): Promise<Verdict> {
  input.progress({ attemptId: input.attemptId, phase: 'stop-old' });
  await stopApp(ctx, input.app, { startsNext: true });
  ctx.faults.hit('after-stop-old');
  input.progress({ attemptId: input.attemptId, phase: 'start' });
  return startAndProbe(ctx, input.app, input.targetVersion, release, input.attemptId, hooks);
}

// Writes a verdict: the app's state, then the journal, durable in that order (the state is on
// disk before the journal names the outcome). The journal's temp file is written and fsynced
// while the state's rename and folder fsync run; it is renamed only after them. A failure
// leaves what the two writes one after the other would: the state failed, nothing changed;
// the journal failed, the state is written.
export async function writeVerdict(ctx: UpdateContext, state: AppState, journal: Journal, afterState?: () => void): Promise<void> {
  await commitInOrder(prepareAppState(ctx.paths, journal.app, state, ctx.faults), prepareJournal(ctx.paths, journal, ctx.faults), afterState);
}

// Records `blocked` in state, or only in memory when even that cannot be written (or the
// state could not be read: `state` null); the next start's recovery blocks the app again.
export async function blockApp(ctx: UpdateContext, app: string, state: AppState | null, reason: string, message: string): Promise<void> {
  const blocked = { reason, message: truncateUtf8(message, 512), since: ctx.clock.now() };
  ctx.blockedInMemory.set(app, blocked);
  if (!state) return;
  await writeAppState(ctx.paths, app, { ...state, blocked }, ctx.faults).catch((err) =>
    log('could not persist blocked app=%s: %s', app, (err as Error).message),
  );
}

// Emits the receipt of a terminal journal; a failure to write it is logged, not fatal:
// the helper re-emits missing receipts at its next start.
export async function emitFor(ctx: UpdateContext, j: Journal): Promise<StoredReceipt | null> {
  try {
    return await ctx.receipts.emit({
      app: j.app,
      attemptId: j.attemptId,
      fromVersion: j.fromVersion,
      targetVersion: j.targetVersion,
      integrity: j.integrity,
      outcome: j.outcome as 'active' | 'rolled-back' | 'failed',
      startedAt: j.startedAt,
      updatedAt: j.updatedAt,
      ...(j.retryAfter !== undefined ? { retryAfter: j.retryAfter } : {}),
      ...(j.rollbackHealthy !== undefined ? { rollbackHealthy: j.rollbackHealthy } : {}),
      ...(j.reason ? { reason: j.reason } : {}),
      ...(j.logFile ? { logFile: j.logFile } : {}),
      ...(causeOf(j.reason) !== undefined ? { causeAttemptId: causeOf(j.reason) as string } : {}),
    });
  } catch (err) {
    log('receipt not written app=%s attempt=%s: %s (re-emitted at the next start)', j.app, j.attemptId, (err as Error).message);
    return null;
  }
}
