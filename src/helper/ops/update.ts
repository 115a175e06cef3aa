import { StewardError } from '../../core/errors.js';
import type { AcceptedAnswer, UpdateAnswer, UpdateRequest } from '../../protocol/schemas.js';
import type { OpContext } from '../server/api-server.js';
import { readCurrent } from '../release-store.js';
import { stageRelease } from '../stage/stage-release.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { handOver } from '../self/handover.js';
import { selfFloors } from '../self/self-floors.js';
import { activate } from '../update/activate.js';
import { authorizedDowngradeOf } from './downgrade.js';
import { scheme } from '../trust/trust-store.js';
import { readJournal } from '../update/journal.js';
import { answerOf } from './answer.js';
import { setHold } from './hold.js';
import { stageInputOf } from './stage-input.js';
import { transferOf } from '../../protocol/transfer.js';
import { runTransaction, type TransactionCore } from './run-transaction.js';

// `update`: stage (or reuse) the release, then activate it through the transaction.
// A request for the version `current` already runs answers ALREADY_ACTIVE with a receipt.
export async function handleUpdate(core: TransactionCore, req: UpdateRequest, ctx: OpContext): Promise<UpdateAnswer | AcceptedAnswer> {
  // An update over admin.sock holds the app: learn who asks while the connection is surely open.
  if (ctx.kind === 'admin') void ctx.peer();
  // A self-update ends in the restart of this helper: its answer is `accepted`, its outcome the
  // receipt the next helper writes.
  const noWait = req.app === SELF_APP || req.noWait;
  return runTransaction(core, { op: 'update', app: req.app, attemptId: req.attemptId, targetVersion: req.version, noWait, notAfter: req.notAfter }, ctx, async ({ attemptId, startedAt, state }, progress, accept) => {
    const floors = req.app === SELF_APP ? selfFloors(core.self) : undefined;
    // Under TUF (docs/design.md §21) the agent's updates are the director's and the delegation's
    // word; admin.sock (root on the host) keeps the release keys.
    const tuf = ctx.kind === 'helper' && (await scheme(core.paths)) === 'tuf' ? await (await import('../trust/verify-tuf-update.js')).verifyTufUpdate(core.paths, { ...req, attemptId }, state, core.clock.now()) : null;
    const downgrade = tuf ? tuf.downgrade : await authorizedDowngradeOf(core, req, state);
    const tufVerified = tuf ? { payload: tuf.payload, ...(tuf.index ? { index: tuf.index } : {}) } : undefined;
    const staged = await stageRelease(core, { ...stageInputOf(req, ctx, attemptId, progress), state, floors, downgradeAuthorized: downgrade !== null, ...(tufVerified ? { tufVerified } : {}) });
    // Told by `status` (an update of the control plane's is answered `accepted` before this).
    core.lastTransfers?.set(req.app, { attemptId, version: req.version, ...transferOf(staged), indexed: req.indexedManifest !== undefined, ...(staged.fallback ? { fallback: staged.fallback } : {}), at: core.clock.now() });
    const cur = await readCurrent(core.paths, req.app);
    if (cur.state === 'invalid') {
      throw new StewardError('RELEASE_INVALID', `${req.app}: current is not a valid release (${cur.why}); \`agentctl recover ${req.app}\``);
    }
    if (ctx.kind === 'admin') state = await setHold(core, req.app, ctx, `update to ${req.version}`, state);
    // steward's version is the one this helper runs, whatever `current` says (a fallback).
    const from = req.app === SELF_APP ? (core.self?.ownVersion ?? null) : cur.state === 'valid' ? cur.version : null;
    if (from === req.version) {
      const j = await readJournal(core.paths, req.app);
      if (j.state !== 'ok' || j.journal.outcome === 'active' || j.journal.targetVersion !== from) {
        accept();
        const receipt = await core.receipts.emit({
          app: req.app,
          attemptId,
          fromVersion: from,
          targetVersion: req.version,
          integrity: staged.tarballIntegrity,
          outcome: 'active',
          startedAt,
          updatedAt: core.clock.now(),
          reason: { code: 'ALREADY_ACTIVE', message: `${req.app} ${req.version} is already active` },
        });
        return {
          attemptId,
          app: req.app,
          outcome: 'active',
          fromVersion: from,
          targetVersion: req.version,
          reason: receipt.payload.reason ?? { code: 'ALREADY_ACTIVE', message: '' },
          receipt: receipt.envelope,
        };
      }
    }
    if (req.app === SELF_APP) return handOver(core, core.self, { attemptId, startedAt, targetVersion: req.version, state, progress, onAccepted: accept });
    const r = await activate(core, { app: req.app, attemptId, fromVersion: from, targetVersion: req.version, startedAt, state, progress, onAccepted: accept, watch: { watchMs: req.watchMs }, ...(downgrade ? { downgrade } : {}) });
    return { ...answerOf(r.journal, r.receipt), transfer: transferOf(staged) };
  });
}
