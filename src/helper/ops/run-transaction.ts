import { StewardError } from '../../core/errors.js';
import type { AppState } from '../../core/state-schemas.js';
import { logger } from '../../platform/log.js';
import type { Progress } from '../../protocol/progress.js';
import type { SocketKind, UpdateAnswer, AcceptedAnswer } from '../../protocol/schemas.js';
import type { AppLocks } from '../app-locks.js';
import type { SelfSeams } from '../self/self-seams.js';
import type { OpContext } from '../server/api-server.js';
import { newAttemptId } from '../stage/stage-release.js';
import { readCurrent } from '../release-store.js';
import type { Attempts } from '../update/attempts.js';
import type { UpdateContext } from '../update/context.js';
import { answerFromReceipt, endBeforeJournal } from './answer.js';
import { preflight } from './preflight.js';
import { refuseClosedWindow } from './window.js';

export interface TransactionCore extends UpdateContext {
  attempts: Attempts<UpdateAnswer>;
  recovering: () => boolean;
  locks: AppLocks;
  // The app steward's seams (self-update); absent in a core that runs no trial.
  self?: SelfSeams;
}

export interface TransactionRequest {
  op: 'update' | 'rollback' | 'recover';
  app: string;
  attemptId?: string | undefined;
  targetVersion: string | null;
  noWait?: boolean | undefined;
  allowBlocked?: boolean;
  // The end of its rollout window: a new attempt is refused WINDOW_CLOSED at or after it.
  notAfter?: number | undefined;
}

const log = logger('helper:transaction');

// `state` is the app's state as read under its lock once per attempt: the body passes it down
// (staging's refusals, the hold, the activation) instead of reading it again.
type Body = (ids: { attemptId: string; startedAt: number; state: AppState }, progress: (p: Progress) => void, accept: () => void) => Promise<UpdateAnswer>;

// The frame every version-changing op shares (docs/design.md §4): attach to a running attempt
// with the same attemptId, answer a finished one from its receipt, refuse (with a refused
// receipt when an attemptId was given), take the app's lock, and run `body` as an attempt
// that no disconnect cancels.
export async function runTransaction(
  core: TransactionCore,
  req: TransactionRequest,
  ctx: OpContext,
  body: Body,
): Promise<UpdateAnswer | AcceptedAnswer> {
  const relay = (p: Progress) => ctx.progress(p);
  if (req.attemptId) {
    const live = core.attempts.get(req.attemptId);
    if (live) {
      if (live.app !== req.app) throw new StewardError('BAD_REQUEST', `attempt ${req.attemptId} belongs to app ${live.app}`);
      log('app=%s request over %s.sock attached to running attempt=%s', req.app, ctx.kind, req.attemptId);
      // noWait holds for an attach too: the agent re-sending an attemptId that is updating the
      // agent itself must not wait for the attempt that stops it (its unit's stop would wait
      // for it in turn, until the agent's own timeout).
      return req.noWait ? acceptedOrDone(core, live, req.attemptId, req.app, relay) : core.attempts.follow(live, relay);
    }
    const settled = await core.receipts.find(req.app, req.attemptId);
    if (settled) return answerFromReceipt(settled);
  }
  // A group member's flood of attempts must not push out receipts the agent has not relayed: past
  // the unrelayed cap helper.sock starts nothing and makes no receipt (receipt-store.ts).
  if (ctx.kind === 'helper') await core.receipts.checkRoom(req.app);
  const attemptId = req.attemptId ?? newAttemptId(core.clock.now());
  const startedAt = core.clock.now();
  const cur = await readCurrent(core.paths, req.app).catch(() => null);
  const facts = { app: req.app, attemptId: req.attemptId, targetVersion: req.targetVersion, fromVersion: cur?.state === 'valid' ? cur.version : null, startedAt };
  let lock;
  let state: AppState;
  try {
    refuseClosedWindow(req.app, req.targetVersion, req.notAfter, startedAt);
    lock = await core.locks.acquire(req.app, { attemptId, op: req.op, phase: 'checks', startedAt });
    // Under the lock: no other attempt can change the state between this read and the verdict.
    state = await preflight(core, req.app, ctx.kind, { allowBlocked: req.allowBlocked ?? false });
  } catch (err) {
    lock?.release();
    return endBeforeJournal(core, err, facts);
  }
  const held = lock;
  const entry = core.attempts.start(attemptId, req.app, async (progress, accept) => {
    let journaled = false;
    try {
      return await body(
        { attemptId, startedAt, state },
        (p) => {
          held.work.phase = p.phase;
          progress(p);
        },
        () => {
          journaled = true;
          accept();
        },
      );
    } catch (err) {
      // Once the journal says `activating` the attempt has changed things: its outcome is the
      // journal's (recovered at the next start), never a `refused` receipt, which would take
      // the attemptId and keep the real outcome's receipt from ever being written.
      if (journaled) throw err;
      // Before the journal: a refused receipt, or a failed one (staging met an I/O error).
      return endBeforeJournal(core, err, facts);
    } finally {
      held.release();
    }
  });
  return req.noWait ? acceptedOrDone(core, entry, attemptId, req.app, relay) : core.attempts.follow(entry, relay);
}

// For noWait: `accepted` once the attempt's journal is durable, or its answer if it ends first
// (a refusal before the journal).
function acceptedOrDone(
  core: TransactionCore,
  entry: NonNullable<ReturnType<Attempts<UpdateAnswer>['get']>>,
  attemptId: string,
  app: string,
  relay: (p: Progress) => void,
): Promise<UpdateAnswer | AcceptedAnswer> {
  const accepted = entry.accepted.then((): AcceptedAnswer => ({ attemptId, app, accepted: true }));
  return Promise.race([accepted, core.attempts.follow(entry, relay)]);
}

export type { SocketKind };
