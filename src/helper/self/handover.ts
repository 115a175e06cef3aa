import { promises as fsp } from 'node:fs';
import { StewardError, truncateUtf8 } from '../../core/errors.js';
import { JOURNAL_SCHEMA_VERSION, type Journal } from '../../core/journal-schema.js';
import { SELF_APP } from '../../core/self-schemas.js';
import type { AppState } from '../../core/state-schemas.js';
import { fsyncDir } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';
import type { Progress } from '../../protocol/progress.js';
import type { UpdateAnswer } from '../../protocol/schemas.js';
import { HANDOVER_OP, type HeldLock } from '../app-locks.js';
import { answerOf } from '../ops/answer.js';
import type { TransactionCore } from '../ops/run-transaction.js';
import { readMarker } from '../release-store.js';
import { emitFor } from '../update/activate.js';
import { writeJournal } from '../update/journal.js';
import { selfFile } from './self-files.js';
import type { SelfSeams } from './self-seams.js';
import { removeSelfFiles, writeCandidate } from './trial-steps.js';

const log = logger('helper:self');

export interface HandoverInput {
  attemptId: string;
  startedAt: number;
  targetVersion: string;
  // The app steward's state, read under its lock.
  state: AppState;
  progress: (p: Progress) => void;
  onAccepted: () => void;
}

// The running helper's part of a self-update (docs/design.md §14, step 1): with versions/<target> of
// the app steward staged and the app steward's lock held (runTransaction), takes every other
// app's lock (their requests get HANDOVER), writes the journal `activating`, writes
// `candidate` (never `current`) and asks systemd to restart the helper's unit. The launcher
// runs the candidate at the next start; whoever runs after it closes the journal
// (settle-trial.ts). Resolves when the handover could not be asked for, or when systemd has
// not stopped this helper `handoverTimeoutMs` after the ask (withdrawHandover); until then it
// keeps every lock.
export async function handOver(core: TransactionCore, self: SelfSeams | undefined, input: HandoverInput): Promise<UpdateAnswer> {
  const { attemptId, targetVersion: target } = input;
  if (!self?.launched) {
    throw new StewardError('CONFIG_INVALID', `${SELF_APP} ${target}: this helper was not started by the launcher (systemd/steward-launcher), so no trial can run it`);
  }
  const cfg = core.config.apps[SELF_APP];
  if (cfg?.runner !== 'self') throw new StewardError('UNKNOWN_APP', `app ${SELF_APP} is not in the host config with runner "self"`);
  const marker = await readMarker(core.paths, SELF_APP, target);
  if (!marker) throw new StewardError('RELEASE_INVALID', `${SELF_APP} ${target} is not staged with a valid marker`);
  const held = await lockEveryApp(core, attemptId, input.startedAt);
  const journal: Journal = {
    schemaVersion: JOURNAL_SCHEMA_VERSION,
    attemptId,
    app: SELF_APP,
    fromVersion: self.ownVersion,
    targetVersion: target,
    integrity: marker.tarballIntegrity,
    outcome: 'activating',
    startedAt: input.startedAt,
    updatedAt: core.clock.now(),
    prior: { previous: input.state.previous, highestActive: input.state.highestActive, quarantine: input.state.quarantine[target] ?? null },
  };
  try {
    await writeJournal(core.paths, journal, core.faults);
  } catch (err) {
    releaseAll(held);
    throw err;
  }
  input.onAccepted();
  try {
    await writeCandidate(core.paths, target);
    input.progress({ attemptId, phase: 'handover' });
    log('handover app=%s attempt=%s from=%s to=%s: restarting %s', SELF_APP, attemptId, self.ownVersion, target, cfg.unit);
    await self.restart(cfg.unit);
  } catch (err) {
    return endUnhanded(core, journal, held, err);
  }
  // Why the locks stay held: the apps must not change under a helper that is being replaced;
  // systemd's stop of this process ends the handover (the wait ends, the locks still held),
  // unless it never comes.
  await core.clock.sleep(cfg.handoverTimeoutMs, self.stopping).catch(() => new Promise<never>(() => {}));
  return withdrawHandover(core, journal, held, { unit: cfg.unit, timeoutMs: cfg.handoverTimeoutMs });
}

// The restart never came: `candidate` is removed (an unlink, which either beats the launcher's
// rename of it to `trying` or finds it gone: one of the two owns the attempt, never both), the
// journal closes `failed` (HANDOVER_TIMEOUT) with a receipt, and the apps are free again. When
// the launcher took `candidate` first, the trial it started closes the journal and this helper
// writes no outcome; it frees the apps all the same.
async function withdrawHandover(core: TransactionCore, journal: Journal, held: HeldLock[], ask: { unit: string; timeoutMs: number }): Promise<UpdateAnswer> {
  const { attemptId, targetVersion: target } = journal;
  const { timeoutMs } = ask;
  try {
    const file = selfFile(core.paths, 'candidate');
    const taken = await fsp.unlink(file).then(
      () => false,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return true;
        throw err;
      },
    );
    if (taken) {
      log('WARNING: handover app=%s attempt=%s: no restart in %d ms, but the launcher already took %s: its trial closes the attempt; the apps are free again', SELF_APP, attemptId, timeoutMs, file);
      throw new StewardError('HANDOVER_TIMEOUT', `${SELF_APP} ${target}: no restart came within ${timeoutMs} ms, but the launcher had taken ${file}: the trial it started closes attempt ${attemptId}`);
    }
    // Why: the launcher's next start must not find it again after a power cut.
    await fsyncDir(core.paths.selfDir);
    const message = `${SELF_APP} ${target}: systemd did not restart ${ask.unit} within ${timeoutMs} ms of the ask; ${file} removed, nothing ran the candidate, ${journal.fromVersion ?? 'the package'} runs on`;
    log('WARNING: handover app=%s attempt=%s withdrawn: %s', SELF_APP, attemptId, message);
    const ended: Journal = { ...journal, outcome: 'failed', updatedAt: core.clock.now(), reason: { code: 'HANDOVER_TIMEOUT', message: truncateUtf8(message, 512) } };
    await writeJournal(core.paths, ended, core.faults);
    return answerOf(ended, await emitFor(core, ended));
  } finally {
    releaseAll(held);
  }
}

// Every app's lock but steward's (which the transaction holds), or BUSY naming the one that
// is busy, with none of them kept.
async function lockEveryApp(core: TransactionCore, attemptId: string, startedAt: number): Promise<HeldLock[]> {
  const held: HeldLock[] = [];
  try {
    for (const app of Object.keys(core.config.apps).sort()) {
      if (app === SELF_APP) continue;
      held.push(await core.locks.acquire(app, { attemptId, op: HANDOVER_OP, phase: 'handover', startedAt }));
    }
  } catch (err) {
    releaseAll(held);
    throw err;
  }
  return held;
}

function releaseAll(held: HeldLock[]): void {
  for (const h of held) h.release();
}

// The restart could not be asked for (or `candidate` not written): nothing ran, the candidate
// goes, and the journal closes `failed` with a receipt; the apps are free again.
async function endUnhanded(core: TransactionCore, journal: Journal, held: HeldLock[], err: unknown): Promise<UpdateAnswer> {
  log('handover app=%s attempt=%s failed: %s', SELF_APP, journal.attemptId, (err as Error).message);
  try {
    await removeSelfFiles(core.paths, ['candidate']);
    const ended: Journal = {
      ...journal,
      outcome: 'failed',
      updatedAt: core.clock.now(),
      reason: { code: err instanceof StewardError ? err.code : 'IO_ERROR', message: truncateUtf8(`${SELF_APP} ${journal.targetVersion}: the handover failed, nothing ran it: ${(err as Error).message}`, 512) },
    };
    await writeJournal(core.paths, ended, core.faults);
    return answerOf(ended, await emitFor(core, ended));
  } finally {
    releaseAll(held);
  }
}
