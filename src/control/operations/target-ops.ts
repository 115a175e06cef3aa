// `target set|list|status|pause|resume|remove` (docs/design.md §18).
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { recordAudit } from '../audit/record-audit.js';
import { dryRunSetTarget, pauseTarget, revertTarget, readTargetNow, readTargetsNow, removeTarget, setTarget, type SetTarget } from '../targets/set-target.js';
import { targetSummary, targetView, type TargetSummary, type TargetView } from '../targets/target-view.js';
import type { TargetRow } from '../store/store.js';
import { checkNames } from './check-names.js';
import { flag, word } from './inputs.js';
import type { OpContext, Operation } from './operation.js';
import { dryRunView, runFlags, runOptions, type DryRunView, type RunFlags } from './rollout-ops.js';

export interface TargetSetView extends TargetView {
  // What happens next, for a person: a selector matching nobody yet, a run it waits for.
  notes: string[];
}

export interface TargetDryRunView {
  dryRun: true;
  target: TargetView;
  notes: string[];
  // The run `set` would start now, as `rollout start --dry-run` shows one, or null.
  run: DryRunView | null;
}

type SetInput = RunFlags & { name: string; app: string; version: string; priority?: string };

function parsePriority(p: string | undefined): number {
  if (p === undefined) return 0;
  if (!/^-?\d{1,7}$/.test(p.trim())) throw new StewardError('USAGE', `--priority ${JSON.stringify(p)} is not an integer from -1000000 to 1000000`);
  return Number(p.trim());
}

const auditTarget = (ctx: OpContext, action: string, details: Record<string, unknown> = {}) => (tx: Parameters<typeof recordAudit>[0], t: TargetRow) =>
  recordAudit(tx, ctx.actor, action, t.name, { app: t.app, version: t.version, ...details });

export const targetSet: Operation<SetInput, TargetSetView | TargetDryRunView> = {
  command: 'target set',
  action: 'target.set',
  role: 'operator',
  input: z.strictObject({ name: word, app: word, version: word, priority: flag, ...runFlags }),
  async run(ctx, { name, app, version, priority, dryRun, ...o }) {
    checkNames(app, version);
    const s: SetTarget = { name, app, version, priority: parsePriority(priority), opts: runOptions(o), by: ctx.actor.operator };
    if (dryRun) {
      const d = await dryRunSetTarget(ctx.store, s);
      return { dryRun: true, target: targetView(d.reading), notes: d.notes, run: d.dryRun ? dryRunView(d.dryRun) : null };
    }
    const given = Object.fromEntries(Object.entries({ ...o, priority }).filter(([, v]) => v !== undefined && !(Array.isArray(v) && v.length === 0)));
    const out = await setTarget(ctx.store, s, auditTarget(ctx, 'target.set', given));
    return { ...targetView(out.reading), notes: out.notes };
  },
};

export const targetList: Operation<Record<string, never>, { targets: TargetSummary[] }> = {
  command: 'target list',
  action: null,
  role: 'viewer',
  input: z.strictObject({}),
  async run(ctx) {
    return { targets: (await readTargetsNow(ctx.store)).map((r) => targetSummary(targetView(r))) };
  },
};

export const targetStatus: Operation<{ name: string }, TargetView> = {
  command: 'target status',
  action: null,
  role: 'viewer',
  input: z.strictObject({ name: word }),
  async run(ctx, { name }) {
    return targetView(await readTargetNow(ctx.store, name));
  },
};

function pauseOp(which: 'pause' | 'resume'): Operation<{ name: string }, TargetView> {
  return {
    command: `target ${which}`,
    action: `target.${which}`,
    role: 'operator',
    input: z.strictObject({ name: word }),
    async run(ctx, { name }) {
      return targetView(await pauseTarget(ctx.store, name, which === 'pause', auditTarget(ctx, `target.${which}`), ctx.actor.operator));
    },
  };
}

export const targetPause = pauseOp('pause');
export const targetResume = pauseOp('resume');

export const targetRemove: Operation<{ name: string }, { removed: string; stoppedRun: number | null }> = {
  command: 'target remove',
  action: 'target.remove',
  role: 'operator',
  input: z.strictObject({ name: word }),
  async run(ctx, { name }) {
    return removeTarget(ctx.store, name, (tx, t, stoppedRunId) => recordAudit(tx, ctx.actor, 'target.remove', t.name, { app: t.app, version: t.version, stoppedRun: stoppedRunId }));
  },
};


export const targetRevert: Operation<{ name: string }, TargetView & { revertRun: number; to: string; revertedNodes: string[]; reverts: Array<{ runId: number; to: string; nodes: string[] }>; leftOut: string[] }> = {
  command: 'target revert',
  action: 'target.revert',
  role: 'operator',
  input: z.strictObject({ name: word }),
  async run(ctx, { name }) {
    const out = await revertTarget(ctx.store, name, (tx, t, runId, to, nodes) => recordAudit(tx, ctx.actor, 'target.revert', t.name, { app: t.app, version: t.version, to, runId, nodes: nodes.length <= 50 ? nodes : nodes.length }));
    // revertRun and to: the first (largest) revert run's, as before there could be several.
    const first = out.reverts[0]!;
    return { ...targetView(out.reading), revertRun: first.runId, to: first.to, revertedNodes: out.reverts.flatMap((r) => r.nodes), reverts: out.reverts, leftOut: out.leftOut };
  },
};
