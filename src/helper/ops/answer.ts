import { isNothingChanged, StewardError, toStewardError, UNDECIDED_CODES, type ReasonCode } from '../../core/errors.js';
import type { Journal } from '../../core/journal-schema.js';
import type { UpdateAnswer } from '../../protocol/schemas.js';
import { logger } from '../../platform/log.js';
import type { StoredReceipt, UpdateContext } from '../update/context.js';

const log = logger('helper:update');

// The answer for a terminal journal and its receipt.
export function answerOf(j: Journal, receipt: StoredReceipt | null): UpdateAnswer {
  return {
    attemptId: j.attemptId,
    app: j.app,
    outcome: j.outcome === 'activating' ? 'failed' : j.outcome,
    fromVersion: j.fromVersion,
    targetVersion: j.targetVersion,
    ...(j.reason ? { reason: j.reason } : {}),
    ...(j.retryAfter !== undefined ? { retryAfter: j.retryAfter } : {}),
    ...(j.logFile ? { logFile: j.logFile } : {}),
    receipt: receipt?.envelope ?? null,
  };
}

// The settled answer of an attempt that ended earlier, from its receipt.
export function answerFromReceipt(r: StoredReceipt): UpdateAnswer {
  const p = r.payload;
  return {
    attemptId: p.attemptId,
    app: p.app,
    outcome: p.outcome,
    fromVersion: p.fromVersion,
    targetVersion: p.targetVersion,
    ...(p.reason ? { reason: p.reason } : {}),
    ...(p.retryAfter !== undefined ? { retryAfter: p.retryAfter } : {}),
    ...(p.logFile ? { logFile: p.logFile } : {}),
    receipt: r.envelope,
    settled: true,
  };
}

// Requests the helper will not take, beside refusals and release problems: nothing changed.
const REQUEST_REFUSALS: ReadonlySet<ReasonCode> = new Set(['FORBIDDEN', 'UNKNOWN_APP', 'BAD_REQUEST', 'NOT_FOUND']);

// docs/design.md §6: every attempt that carried an attemptId ends in a receipt, also one that ends
// before its journal. A refusal, a release problem or a request not taken (nothing changed)
// gets a `refused` receipt; any other failure (an I/O error while staging, a state file that
// does not read, a bug) a `failed` one with the error's code as its reason, so that a rollout
// halts at once instead of waiting for its verdict timeout. The error is rethrown either way,
// as a StewardError (a raw errno error is IO_ERROR, or DISK_FULL; anything else INTERNAL).
export async function endBeforeJournal(
  ctx: UpdateContext,
  err: unknown,
  req: { app: string; attemptId?: string | undefined; targetVersion: string | null; fromVersion: string | null; startedAt: number },
): Promise<never> {
  const e = err instanceof StewardError ? err : toStewardError(err, isErrnoError(err) ? 'IO_ERROR' : 'INTERNAL', req.app);
  // A code that decides nothing (a handover: the helper is about to restart on another steward
  // version) makes no receipt: the agent asks again at its next heartbeat, where a receipt would
  // take the attemptId and leave it refused for good, say in the middle of another app's rollout.
  if (!req.attemptId || UNDECIDED_CODES.has(e.code)) throw e;
  // A receipt other than `refused` must name its target (receiptPayloadSchema).
  const refused = isNothingChanged(e.code) || REQUEST_REFUSALS.has(e.code) || req.targetVersion === null;
  try {
    await ctx.receipts.emit({
      app: req.app,
      attemptId: req.attemptId,
      fromVersion: req.fromVersion,
      targetVersion: req.targetVersion,
      integrity: null,
      outcome: refused ? 'refused' : 'failed',
      startedAt: req.startedAt,
      updatedAt: ctx.clock.now(),
      reason: { code: e.code, message: e.message },
      // No journal names this attempt: the journal's own receipt stays the one the start looks for.
      ofJournal: false,
    });
  } catch (emitErr) {
    // No room for one more unrelayed receipt: the caller must learn that no receipt was made.
    if (emitErr instanceof StewardError && emitErr.code === 'RECEIPTS_UNRELAYED') {
      throw new StewardError(emitErr.code, `${emitErr.message}; the attempt ended without one: ${e.code}: ${e.message}`, { details: { attemptId: req.attemptId } });
    }
    log('receipt not written app=%s attempt=%s outcome=%s: %s', req.app, req.attemptId, refused ? 'refused' : 'failed', (emitErr as Error).message);
  }
  e.details.attemptId ??= req.attemptId;
  throw e;
}

// Whether `err` is a system call's error (it carries an errno code such as ENOSPC or EIO).
function isErrnoError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && /^E[A-Z0-9]+$/.test((err as NodeJS.ErrnoException).code as string);
}
