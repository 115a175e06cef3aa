import { StewardError } from '../../core/errors.js';
import { AGENT_BY, type AcceptedAnswer, type RecoverRequest, type RollbackRequest, type UpdateAnswer } from '../../protocol/schemas.js';
import type { OpContext } from '../server/api-server.js';
import { readCurrent, readMarker } from '../release-store.js';
import type { AppState } from '../../core/state-schemas.js';
import { readAppState, writeAppState } from '../state/app-state.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { handOver } from '../self/handover.js';
import { activate, rollBackUnhealthy } from '../update/activate.js';
import { openWatch, type WatchWindow } from '../update/watch-window.js';
import { answerOf } from './answer.js';
import { setHold } from './hold.js';
import { runTransaction, type TransactionCore } from './run-transaction.js';

async function requireStaged(core: TransactionCore, app: string, version: string): Promise<void> {
  if (!(await readMarker(core.paths, app, version))) {
    throw new StewardError('RELEASE_INVALID', `${app} ${version} is not staged with a valid marker (\`agentctl releases ${app}\`)`);
  }
}

// `rollback`: activates `previous` (or, on admin.sock, --to VERSION) through the same
// transaction. Not a downgrade refusal: that tree was verified when it was staged.
// It puts a hold on the app, so a control plane cannot undo it within a heartbeat, except when
// the control plane asked for it: the agent's rollback of a `target revert` (docs/design.md §18,
// over helper.sock `by: steward-agent`) leaves the app free for the control plane's next wish, as
// an update it hands on does. Claiming to be the agent wins nothing: it only leaves out a hold
// that the caller chose not to have.
export async function handleRollback(core: TransactionCore, req: RollbackRequest, ctx: OpContext): Promise<UpdateAnswer | AcceptedAnswer> {
  // Read before the lock only to name the target (also in a refused receipt); the attempt gets
  // its own read under the lock.
  const before = await readAppState(core.paths, req.app).catch(() => null);
  const target = req.to ?? before?.previous ?? null;
  // For the hold, while the connection is surely open. Not without a target: that rollback is
  // refused and puts no hold, and reading the peer starts a process (platform/peer-credentials.ts),
  // which a flood of such refusals over helper.sock would otherwise start each time.
  if (target) void ctx.peer();
  const self = req.app === SELF_APP;
  const fromControlPlane = ctx.kind === 'helper' && req.by === AGENT_BY;
  const hold = (state: AppState) => (fromControlPlane ? Promise.resolve(state) : setHold(core, req.app, ctx, `rollback to ${target}`, state));
  return runTransaction(core, { op: 'rollback', app: req.app, attemptId: req.attemptId, targetVersion: target, noWait: self || req.noWait }, ctx, async ({ attemptId, startedAt, state }, progress, accept) => {
    if (!target) throw new StewardError('RELEASE_INVALID', `${req.app} has no previous version to roll back to`);
    await requireStaged(core, req.app, target);
    // steward's rollback is a trial of `previous`, as any version of it (docs/design.md §14).
    if (self) {
      if (target === core.self?.ownVersion) throw new StewardError('RELEASE_INVALID', `${req.app} ${target} is the version running`);
      const held = await hold(state);
      return handOver(core, core.self, { attemptId, startedAt, targetVersion: target, state: held, progress, onAccepted: accept });
    }
    const cur = await readCurrent(core.paths, req.app);
    if (cur.state !== 'valid') throw new StewardError('RELEASE_INVALID', `${req.app}: current is not a valid release; \`agentctl recover ${req.app}\``);
    if (cur.version === target) throw new StewardError('RELEASE_INVALID', `${req.app} ${target} is already current`);
    const held = await hold(state);
    const r = await activate(core, { app: req.app, attemptId, fromVersion: cur.version, targetVersion: target, startedAt, state: held, progress, onAccepted: accept });
    return answerOf(r.journal, r.receipt);
  });
}

// `recover` (admin.sock): a normal activation of VERSION (default: what `current` resolves
// to) as a new attempt, allowed while the app is blocked; clears `blocked` once it ends.
export async function handleRecover(core: TransactionCore, req: RecoverRequest, ctx: OpContext): Promise<UpdateAnswer | AcceptedAnswer> {
  const cur = await readCurrent(core.paths, req.app).catch(() => null);
  const target = req.to ?? (cur?.state === 'valid' ? cur.version : null);
  return runTransaction(core, { op: 'recover', app: req.app, attemptId: req.attemptId, targetVersion: target, allowBlocked: true }, ctx, async ({ attemptId, startedAt, state }, progress, accept) => {
    if (!target) throw new StewardError('RELEASE_INVALID', `${req.app}: current is not a valid release; name one with --to VERSION`);
    await requireStaged(core, req.app, target);
    const from = cur?.state === 'valid' ? cur.version : null;
    const r = await activate(core, { app: req.app, attemptId, fromVersion: from, targetVersion: target, startedAt, state, progress, onAccepted: accept });
    core.blockedInMemory.delete(req.app);
    // Read again: the activation wrote its verdict.
    const after = await readAppState(core.paths, req.app);
    if (after.blocked) await writeAppState(core.paths, req.app, { ...after, blocked: null });
    return answerOf(r.journal, r.receipt);
  });
}

// The watch window's rollback (docs/design.md §17), asked for by the helper itself: a new attempt
// through the same transaction, as if over admin.sock (a hold does not stop it: it undoes what
// the hold's owner would want undone), with no client to answer. Refused (no receipt: nobody
// asked with an attemptId) when the window closed in between: a later update, a rollback or
// stop by an operator, or its end.
export async function rollBackByWindow(core: TransactionCore, app: string, w: WatchWindow, why: string): Promise<void> {
  const ctx: OpContext = {
    kind: 'admin',
    id: null,
    progress: () => {},
    upload: null,
    uploadSize: 0,
    closed: new AbortController().signal,
    peer: async () => ({ ok: false, why: 'the helper itself, for a watch window' }),
  };
  const answer = await runTransaction(core, { op: 'rollback', app, targetVersion: w.fromVersion }, ctx, async ({ attemptId, startedAt, state }, progress, accept) => {
    const open = await openWatch(core, app);
    if (!open || open.attemptId !== w.attemptId) throw new StewardError('RELEASE_INVALID', `${app} ${w.version}: its watch window closed before its rollback began`);
    const r = await rollBackUnhealthy(core, { app, attemptId, startedAt, state, progress, onAccepted: accept, window: open, why });
    return answerOf(r.journal, r.receipt);
  });
  if ('outcome' in answer && answer.outcome === 'refused') throw new Error(`refused: ${answer.reason?.code ?? ''} ${answer.reason?.message ?? ''}`);
}
