import type { UpdateAnswer } from '../protocol/answers.js';
import { requireApp } from '../host/config.js';
import { listReceipts } from './ops/receipts.js';
import { listReleases } from './ops/releases.js';
import { readStatus } from './ops/status.js';
import { putHold, releaseHold } from './ops/hold.js';
import { handleRecover, handleRollback } from './ops/rollback.js';
import type { TransactionCore } from './ops/run-transaction.js';
import { handleUpdate } from './ops/update.js';
import { scheme } from './trust/trust-store.js';
import { TrustRefreshGate } from './trust/refresh-gate.js';
import { handleRunState } from './ops/run-state.js';
import { stageInputOf } from './ops/stage-input.js';
import { refuseClosedWindow } from './ops/window.js';
import type { ReceiptStore } from './receipts/receipt-store.js';
import type { OpHandlers } from './server/dispatch.js';
import { newAttemptId, stageRelease } from './stage/stage-release.js';
import { pruneReleases } from './update/prune.js';
import { verifyApp } from './ops/verify.js';
import type { Attempts } from './update/attempts.js';

export interface HelperCore extends TransactionCore {
  attempts: Attempts<UpdateAnswer>;
  receiptStore: ReceiptStore;
  startedAt: number;
}

// The op handlers the local API dispatches to, bound to one helper's state: each takes its op's
// checked request and answers its op's answer.
export function makeHandlers(core: HelperCore) {
  // The bound on trust-refresh over helper.sock (docs/design.md §21.3).
  const trustGate = new TrustRefreshGate(core.clock);
  return {
    status: (req) =>
      readStatus(
        {
          paths: core.paths,
          config: core.config,
          startedAt: core.startedAt,
          recovering: core.recovering(),
          running: (app) => core.locks.get(app),
          blockedInMemory: core.blockedInMemory,
          ...(core.lastTransfers ? { lastTransfers: core.lastTransfers } : {}),
          units: core.units,
          now: core.clock.now(),
          ...(core.self ? { ownVersion: core.self.ownVersion } : {}),
          signals: true,
        },
        req.app,
      ),
    releases: (req) => listReleases(core.paths, core.config, req.app, core.clock.now()),
    receipts: (req) => listReceipts(core.receiptStore, core.config, req.app),
    stage: async (req, ctx) => {
      refuseClosedWindow(req.app, req.version, req.notAfter, core.clock.now());
      const attemptId = req.attemptId ?? newAttemptId(core.clock.now());
      const held = await core.locks.acquire(req.app, { attemptId, op: 'stage', phase: 'verify', startedAt: core.clock.now() });
      try {
        // Under TUF (docs/design.md §21.3) a stage over helper.sock is held to the app's
        // delegation as an update is, without a directive (nothing is activated).
        const tuf = ctx.kind === 'helper' && (await scheme(core.paths)) === 'tuf' ? await (await import('./trust/verify-tuf-update.js')).verifyTufUpdate(core.paths, { ...req, attemptId }, { highestActive: null }, core.clock.now(), { directed: false }) : null;
        return await stageRelease(core, {
          ...stageInputOf(req, ctx, attemptId, (p) => {
            held.work.phase = p.phase;
            ctx.progress(p);
          }),
          ...(tuf ? { tufVerified: { payload: tuf.payload, ...(tuf.index ? { index: tuf.index } : {}) } } : {}),
        });
      } finally {
        held.release();
      }
    },
    update: (req, ctx) => handleUpdate(core, req, ctx),
    rollback: (req, ctx) => handleRollback(core, req, ctx),
    recover: (req, ctx) => handleRecover(core, req, ctx),
    'release-hold': (req, ctx) => releaseHold(core, req.app, ctx),
    hold: (req, ctx) => putHold(core, req, ctx),
    start: (req, ctx) => handleRunState(core, req, ctx),
    stop: (req, ctx) => handleRunState(core, req, ctx),
    restart: (req, ctx) => handleRunState(core, req, ctx),
    // tuf-js is loaded only when trust is verified (the helper's start stays small).
    'trust-refresh': async (req, ctx) => (await import('./ops/trust.js')).handleTrustRefresh(core, req, ctx, trustGate),
    'trust-set-root': async (req, ctx) => (await import('./ops/trust.js')).handleTrustSetRoot(core, req, ctx, trustGate),
    'agent-confirm': (req, ctx) => ctx.peer().then((peer) => core.agentConfirms.confirm(peer, req)),
    prune: async (req) => {
      requireApp(core.config, req.app);
      const held = await core.locks.acquire(req.app, { attemptId: 'prune', op: 'prune', phase: 'prune', startedAt: core.clock.now() });
      try {
        return { app: req.app, removed: await pruneReleases(core, req.app, req.keep) };
      } finally {
        held.release();
      }
    },
    verify: async (req) => {
      if (req.app) requireApp(core.config, req.app);
      const apps = req.app ? [req.app] : Object.keys(core.config.apps).sort();
      const out = [];
      for (const app of apps) {
        const held = await core.locks.acquire(app, { attemptId: 'verify', op: 'verify', phase: 'verify', startedAt: core.clock.now() });
        try {
          out.push(await verifyApp(core.paths, app));
        } finally {
          held.release();
        }
      }
      return { apps: out };
    },
  } satisfies OpHandlers;
}
