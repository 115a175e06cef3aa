import { isNothingChanged, StewardError } from '../../core/errors.js';
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

// DESIGN §6: a refusal of a request that carried an attemptId produces a `refused` receipt.
// Only refusals and release problems (nothing changed) do; the error is rethrown either way.
export async function emitRefusal(
  ctx: UpdateContext,
  err: unknown,
  req: { app: string; attemptId?: string | undefined; targetVersion: string | null; fromVersion: string | null; startedAt: number },
): Promise<never> {
  if (err instanceof StewardError && req.attemptId && ctx.config.apps[req.app] && (isNothingChanged(err.code) || err.code === 'FORBIDDEN')) {
    try {
      await ctx.receipts.emit({
        app: req.app,
        attemptId: req.attemptId,
        fromVersion: req.fromVersion,
        targetVersion: req.targetVersion,
        integrity: null,
        outcome: 'refused',
        startedAt: req.startedAt,
        updatedAt: ctx.clock.now(),
        reason: { code: err.code, message: err.message.slice(0, 512) },
      });
    } catch (e) {
      // No room for one more unrelayed receipt: the caller must learn that no receipt was made.
      if (e instanceof StewardError && e.code === 'RECEIPTS_UNRELAYED') throw new StewardError(e.code, `${e.message}; the request was refused: ${err.code}: ${err.message}`, { details: { attemptId: req.attemptId } });
      log('refused receipt not written app=%s attempt=%s: %s', req.app, req.attemptId, (e as Error).message);
    }
    err.details.attemptId ??= req.attemptId;
  }
  throw err;
}
