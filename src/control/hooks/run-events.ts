// The events of a run (run.started, run.paused, run.resumed, run.halted, run.succeeded, run.stopped),
// queued in the transaction that makes the change (emit-event.ts). The data: the run as it is after
// the change, and the target that owns it, if one does.
import type { StoreTx } from '../store/store.js';
import { emitEvent } from './emit-event.js';
import type { HookEvent } from './hook-events.js';

// Queues `event` about run `runId` as it stands now in `tx`. `why`: the reason of a change the run's
// row does not hold (a pause by the analysis: `{code: 'ANALYSIS_INCONCLUSIVE', message}`), sent as
// `data.reason`.
export async function emitRunEvent(tx: StoreTx, event: Extract<HookEvent, `run.${string}`>, runId: number, why?: { code: string; message: string }): Promise<void> {
  // Cheap when nobody listens: one read of the hooks, before the run's.
  if (!(await tx.hooks.list()).some((h) => h.events.includes(event))) return;
  const run = await tx.runs.get(runId);
  if (!run) return;
  const owner = await tx.targets.ownerOf(runId);
  await emitEvent(tx, event, `run/${run.id}`, {
    run: {
      id: run.id,
      app: run.app,
      version: run.version,
      status: run.status,
      paused: run.paused,
      selector: run.selector,
      startedAt: new Date(run.startedAt).toISOString(),
      endedAt: run.endedAt === null ? null : new Date(run.endedAt).toISOString(),
      halt: run.haltCode === null && run.haltMessage === null ? null : { code: run.haltCode, nodeId: run.haltNodeId, message: run.haltMessage },
    },
    owner: owner ? { kind: owner.kind, target: owner.target } : null,
    ...(why ? { reason: why } : {}),
  });
}
