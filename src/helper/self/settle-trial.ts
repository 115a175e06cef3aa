import { StewardError, truncateUtf8 } from '../../core/errors.js';
import { JOURNAL_SCHEMA_VERSION, type Journal } from '../../core/journal-schema.js';
import { nextQuarantine } from '../../core/quarantine.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { compareVersions } from '../../core/version.js';
import { logger } from '../../platform/log.js';
import { readAppState } from '../state/app-state.js';
import { emitFor, writeVerdict } from '../update/activate.js';
import type { UpdateContext } from '../update/context.js';
import { readJournal, writeJournal } from '../update/journal.js';
import { readMarker } from '../release-store.js';
import type { StageDeps } from '../stage/stage-release.js';
import { stagePackageTree } from './stage-package.js';
import type { SelfSeams } from './self-seams.js';
import { selfFile } from './self-files.js';
import type { TrialState } from './trial-state.js';
import { commitTrial, removeSelfFiles } from './trial-steps.js';

const log = logger('helper:self');

export interface SettleInput {
  trial: TrialState;
  self: SelfSeams;
  // The candidate's self-probe (main.ts): resolves when it passed, rejects with why not.
  probe: () => Promise<void>;
}

// At the helper's start, once its sockets answer and every app is recovered and had its first
// pass (docs/design.md §14, step 3): closes what the last trial left (`reverted`, an `activating`
// journal of the app steward), reports a fallback, and on trial probes this helper and commits
// it. Then the caller tells systemd it is ready. Throws only on trial, when the probe or the
// commit failed: the helper then exits without getting ready, and the launcher's next start
// reverts the trial. Nothing here blocks an app (docs/design.md §16).
export async function settleTrial(ctx: UpdateContext & StageDeps, input: SettleInput): Promise<void> {
  const { trial, self } = input;
  for (const p of trial.problems) log('self-update: %s', p);
  if (trial.reverted) {
    const r = trial.reverted;
    await closeJournalOf(ctx, r.version, r.committed ? 'active' : 'reverted');
    // After the verdict is durable: a cut before this finds the same `reverted` again, and a
    // terminal journal makes its second closing a no-op.
    await removeSelfFiles(ctx.paths, ['reverted']);
  }
  if (trial.launched?.decision === 'trial') {
    const version = trial.launched.version;
    if (trial.onTrial?.source === 'package' && trial.onTrial.version === version) await openPackageTrial(ctx, version, trial.current);
    await input.probe();
    await commitTrial(ctx.paths, version);
    log('self-update: %s %s committed', SELF_APP, version);
    await closeJournalOf(ctx, version, 'active');
    return;
  }
  if (trial.fallback && trial.launched?.decision === 'fallback') await reportFallback(ctx, trial, self);
  // A journal left `activating` by a handover whose candidate never ran (the old helper was
  // cut before it wrote `candidate`, or the restart came from elsewhere): `current` tells
  // whether its trial committed.
  const j = await readJournal(ctx.paths, SELF_APP);
  if (j.state === 'ok' && j.journal.outcome === 'activating') {
    await closeJournalOf(ctx, j.journal.targetVersion, j.journal.targetVersion === trial.current ? 'active' : 'interrupted');
  }
}

type Ending = 'active' | 'reverted' | 'interrupted';

// A package trial has no handover before it (the launcher made it a candidate): its tree is
// staged into versions/ for the commit, and its journal `activating` written here, so that a
// revert is closed, quarantined and receipted as a release's is.
async function openPackageTrial(ctx: UpdateContext & StageDeps, version: string, from: string | null): Promise<void> {
  await stagePackageTree(ctx, version);
  const marker = await readMarker(ctx.paths, SELF_APP, version);
  if (!marker) throw new StewardError('RELEASE_INVALID', `${SELF_APP} ${version}: the package's tree was staged without a valid marker`);
  const j = await readJournal(ctx.paths, SELF_APP);
  if (j.state === 'ok' && j.journal.outcome === 'activating' && j.journal.targetVersion === version) return;
  const state = await readAppState(ctx.paths, SELF_APP);
  const now = ctx.clock.now();
  await writeJournal(ctx.paths, {
    schemaVersion: JOURNAL_SCHEMA_VERSION,
    attemptId: `package-${version}-${now.toString(36)}`,
    app: SELF_APP,
    fromVersion: from,
    targetVersion: version,
    integrity: marker.tarballIntegrity,
    outcome: 'activating',
    startedAt: now,
    updatedAt: now,
    prior: { previous: state.previous, highestActive: state.highestActive, quarantine: state.quarantine[version] ?? null },
  }, ctx.faults);
}

// Closes the app steward's journal when it is `activating` for `version`: `active` (its trial
// committed), `reverted` (the launcher found the trial uncommitted: the version is blamed and
// quarantined) or `interrupted` (it never ran: no blame). Then the receipt.
async function closeJournalOf(ctx: UpdateContext, version: string, ending: Ending): Promise<void> {
  const read = await readJournal(ctx.paths, SELF_APP);
  if (read.state !== 'ok' || read.journal.outcome !== 'activating' || read.journal.targetVersion !== version) {
    // Nothing of ours to close: a package trial (no journal), or a journal already closed. An
    // invalid journal is left as it is for `agentctl recover steward`, and blocks no other app.
    if (read.state === 'invalid') log('self-update: the journal of %s is invalid (%s); left for agentctl recover', SELF_APP, read.why);
    return;
  }
  const j = read.journal;
  const state = await readAppState(ctx.paths, SELF_APP);
  const now = ctx.clock.now();
  const policy = ctx.config.apps[SELF_APP]?.quarantine ?? { baseMs: 300_000, capMs: 86_400_000 };
  let ended: Journal;
  if (ending === 'active') {
    const { [version]: _cleared, ...quarantine } = state.quarantine;
    const highestActive = state.highestActive && compareVersions(state.highestActive, version) > 0 ? state.highestActive : version;
    const previous = j.fromVersion !== null && j.fromVersion !== version ? j.fromVersion : state.previous;
    ended = { ...j, outcome: 'active', updatedAt: now };
    await writeVerdict(ctx, { ...state, previous, highestActive, quarantine }, ended);
  } else {
    const blame = ending === 'reverted';
    const q = nextQuarantine(state, version, policy, now, blame);
    const why = blame
      ? `its trial did not commit (it exited, hung past the start timeout, was killed, or the power went: the launcher found ${selfFile(ctx.paths, 'trying')})`
      : 'the handover was cut before the candidate ran';
    ended = {
      ...j,
      outcome: 'rolled-back',
      updatedAt: now,
      retryAfter: q.retryAfter,
      rollbackHealthy: true,
      reason: { code: blame ? 'REPLACEMENT_UNHEALTHY' : 'ACTIVATION_INTERRUPTED', message: truncateUtf8(`${SELF_APP} ${version}: ${why}; back on ${j.fromVersion ?? 'the package'}`, 512) },
    };
    await writeVerdict(ctx, { ...state, quarantine: { ...state.quarantine, [version]: q } }, ended);
  }
  log('self-update: %s %s closed %s attempt=%s', SELF_APP, version, ended.outcome, j.attemptId);
  await emitFor(ctx, ended);
}

// A committed version set aside by the launcher after starts that never got ready: one
// receipt `failed`, reason FALLBACK, per fallback file (its attemptId is made from it).
async function reportFallback(ctx: UpdateContext, trial: TrialState, self: SelfSeams): Promise<void> {
  const f = trial.fallback!;
  const attemptId = `fallback-${f.version}-${f.starts}`;
  if (await ctx.receipts.find(SELF_APP, attemptId)) return;
  const now = ctx.clock.now();
  log('self-update: FALLBACK: %s %s never got ready %d starts in a row; the package %s runs', SELF_APP, f.version, f.starts, self.ownVersion);
  await ctx.receipts
    .emit({
      app: SELF_APP,
      attemptId,
      fromVersion: f.version,
      targetVersion: self.ownVersion,
      integrity: null,
      outcome: 'failed',
      startedAt: now,
      updatedAt: now,
      reason: { code: 'FALLBACK', message: `${SELF_APP} ${f.version} never got ready ${f.starts} starts in a row; the package's ${self.ownVersion} runs instead` },
    })
    .catch((err) => log('fallback receipt not written: %s', (err as Error).message));
}

