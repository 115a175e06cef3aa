import type { UpdateAnswer } from '../protocol/schemas.js';
import { requireApp } from '../host/config.js';
import type {
  PruneRequest,
  ReceiptsRequest,
  RecoverRequest,
  ReleaseHoldRequest,
  ReleasesRequest,
  RollbackRequest,
  RunStateRequest,
  StageRequest,
  StatusRequest,
  UpdateRequest,
} from '../protocol/schemas.js';
import { listReceipts } from './ops/receipts.js';
import { listReleases } from './ops/releases.js';
import { readStatus } from './ops/status.js';
import { releaseHold } from './ops/hold.js';
import { handleRecover, handleRollback } from './ops/rollback.js';
import type { TransactionCore } from './ops/run-transaction.js';
import { handleUpdate } from './ops/update.js';
import { handleRunState } from './ops/run-state.js';
import { progressFields, stageInputOf } from './ops/stage-input.js';
import type { ReceiptStore } from './receipts/receipt-store.js';
import type { OpContext } from './server/api-server.js';
import { newAttemptId, stageRelease } from './stage/stage-release.js';
import { pruneReleases } from './update/prune.js';
import type { Attempts } from './update/attempts.js';

export interface HelperCore extends TransactionCore {
  attempts: Attempts<UpdateAnswer>;
  receiptStore: ReceiptStore;
  startedAt: number;
}

// The op handlers the local API dispatches to, bound to one helper's state.
export function makeHandlers(core: HelperCore) {
  return {
    status: (req: unknown) =>
      readStatus(
        {
          paths: core.paths,
          config: core.config,
          startedAt: core.startedAt,
          recovering: core.recovering(),
          running: (app) => core.locks.get(app),
          blockedInMemory: core.blockedInMemory,
          units: core.units,
          now: core.clock.now(),
        },
        (req as StatusRequest).app,
      ),
    releases: (req: unknown) => listReleases(core.paths, core.config, (req as ReleasesRequest).app, core.clock.now()),
    receipts: (req: unknown) => listReceipts(core.receiptStore, core.config, (req as ReceiptsRequest).app),
    stage: async (req: unknown, ctx: OpContext) => {
      const r = req as StageRequest;
      const attemptId = r.attemptId ?? newAttemptId(core.clock.now());
      const held = await core.locks.acquire(r.app, { attemptId, op: 'stage', phase: 'verify', startedAt: core.clock.now() });
      try {
        return await stageRelease(
          core,
          stageInputOf(r, ctx, attemptId, (phase, bytes, total) => {
            held.work.phase = phase;
            ctx.progress({ attemptId, ...progressFields(phase, bytes, total) });
          }),
        );
      } finally {
        held.release();
      }
    },
    update: (req: unknown, ctx: OpContext) => handleUpdate(core, req as UpdateRequest, ctx),
    rollback: (req: unknown, ctx: OpContext) => handleRollback(core, req as RollbackRequest, ctx),
    recover: (req: unknown, ctx: OpContext) => handleRecover(core, req as RecoverRequest, ctx),
    'release-hold': (req: unknown) => releaseHold(core, (req as ReleaseHoldRequest).app),
    start: (req: unknown, ctx: OpContext) => handleRunState(core, req as RunStateRequest, ctx),
    stop: (req: unknown, ctx: OpContext) => handleRunState(core, req as RunStateRequest, ctx),
    restart: (req: unknown, ctx: OpContext) => handleRunState(core, req as RunStateRequest, ctx),
    prune: async (req: unknown) => {
      const r = req as PruneRequest;
      requireApp(core.config, r.app);
      const held = await core.locks.acquire(r.app, { attemptId: 'prune', op: 'prune', phase: 'prune', startedAt: core.clock.now() });
      try {
        return { app: r.app, removed: await pruneReleases(core, r.app, r.keep) };
      } finally {
        held.release();
      }
    },
  };
}
