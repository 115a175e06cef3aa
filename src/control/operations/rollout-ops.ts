// `rollout start|retry|stop|pause|resume|status|list` (docs/design.md §11).
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import type { NodePlan, PlanCounts, RunStatus } from '../../core/rollout-planner.js';
import type { SimulatedBatch } from '../../core/rollout-simulate.js';
import { parseAnalysisMode, parseAnalysisThreshold, parseAnalysisWindow } from '../analysis/policy.js';
import { recordAudit } from '../audit/record-audit.js';
import { parseCount, parseDuration, parseInstant } from '../cli/parse-options.js';
import { describeRun, type RunStatusView } from '../rollouts/run-status.js';
import { dryRunRetry, dryRunStart, pauseRun, retryRun, startRun, stopRun, type DryRun, type RecordChange, type RunOptions } from '../rollouts/start-run.js';
import type { ControlStore, NewRun, RunRow } from '../store/store.js';
import { checkNames } from './check-names.js';
import { flag, flags, toggle, word } from './inputs.js';
import type { OpContext, Operation } from './operation.js';
import { decodeCursor, encodeCursor, pageLimit } from './paging.js';

// The policy flags of `rollout start` and `rollout retry`, as the CLI takes them.
export const runFlags = {
  select: flag,
  canaries: flag,
  canary: flags,
  seed: flag,
  batch: flag,
  bake: flag,
  maxFailures: flag,
  maxRefused: flag,
  maxFetchFailures: flag,
  verdictTimeout: flag,
  allowRetryReverted: toggle,
  window: flags,
  tz: flag,
  startAt: flag,
  analysis: flag,
  analysisWindow: flag,
  analysisThreshold: flags,
  dryRun: toggle,
};

export type RunFlags = { [K in keyof typeof runFlags]?: z.output<(typeof runFlags)[K]> };

// The flags given, as options (a flag left out keeps the default, or the retried run's value).
export function runOptions(o: RunFlags): RunOptions {
  return {
    ...(o.select !== undefined ? { selector: o.select } : {}),
    ...(o.canaries !== undefined ? { canaries: parseCount(o.canaries, '--canaries', 1000) } : {}),
    ...(o.canary?.length ? { canary: o.canary } : {}),
    ...(o.seed !== undefined ? { seed: parseCount(o.seed, '--seed', 4_294_967_295) } : {}),
    ...(o.batch !== undefined ? { batch: o.batch.trim() } : {}),
    ...(o.bake !== undefined ? { bakeMs: parseDuration(o.bake, '--bake', { allowZero: true }) } : {}),
    ...(o.maxFailures !== undefined ? { maxFailures: parseCount(o.maxFailures, '--max-failures') } : {}),
    ...(o.maxRefused !== undefined ? { maxRefused: o.maxRefused.trim() } : {}),
    ...(o.maxFetchFailures !== undefined ? { maxFetchFailures: o.maxFetchFailures.trim() } : {}),
    ...(o.verdictTimeout ? { verdictTimeoutMs: parseDuration(o.verdictTimeout, '--verdict-timeout') } : {}),
    ...(o.allowRetryReverted ? { allowRetryReverted: true } : {}),
    ...(o.window?.length ? { windows: o.window } : {}),
    ...(o.tz !== undefined ? { tz: o.tz } : {}),
    ...(o.startAt !== undefined ? { startAt: parseInstant(o.startAt, '--start-at') } : {}),
    ...(o.analysis !== undefined ? { analysis: parseAnalysisMode(o.analysis) } : {}),
    ...(o.analysisWindow !== undefined ? { analysisWindowMs: parseAnalysisWindow(o.analysisWindow) } : {}),
    ...(o.analysisThreshold?.length ? { analysisThresholds: Object.fromEntries(o.analysisThreshold.map((t) => parseAnalysisThreshold(t)).map((t) => [t.key, t.value])) } : {}),
  };
}

// A dry run as --json prints it (docs/design.md §11): the plan the planner would follow.
export interface DryRunView {
  dryRun: true;
  run: NewRun;
  nodes: Array<{ nodeId: string; hostname: string } & NodePlan>;
  counts: PlanCounts;
  batchSize: number;
  refusedLimit: number;
  batches: SimulatedBatch[];
  status: RunStatus;
  endsAt: number | null;
  truncated: boolean;
  // The hostname of each node the run covers (the batches name nodes by id).
  hostnames: Record<string, string>;
}

export function dryRunView(d: DryRun): DryRunView {
  const s = d.simulation;
  return {
    dryRun: true,
    run: d.run,
    nodes: Object.entries(s.first.nodes).map(([nodeId, n]) => ({ nodeId, hostname: d.hostnames[nodeId] ?? '', ...n })),
    counts: s.first.counts,
    batchSize: s.first.batchSize,
    refusedLimit: s.first.refusedLimit,
    batches: s.batches,
    status: s.status,
    endsAt: s.endsAt,
    truncated: s.truncated,
    hostnames: d.hostnames,
  };
}

// The status of the latest run of `app`, read after the change that made it.
async function describeLatest(store: ControlStore, app: string): Promise<RunStatusView> {
  return store.read(async (tx) => describeRun(tx, (await tx.runs.latest(app)) as RunRow));
}

// The audit entry of a change to a run, with the flags it was given.
function audited(ctx: OpContext, action: string, target: string, given: Record<string, unknown> = {}): RecordChange {
  const details = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined && !(Array.isArray(v) && v.length === 0)));
  return (tx, run) => recordAudit(tx, ctx.actor, action, target, { runId: run.id, ...details });
}

type StartInput = RunFlags & { app: string; version: string };
type RetryInput = RunFlags & { app: string; behind?: boolean };

export const rolloutStart: Operation<StartInput, RunStatusView | DryRunView> = {
  command: 'rollout start',
  action: 'rollout.start',
  role: 'operator',
  input: z.strictObject({ app: word, version: word, ...runFlags }),
  async run(ctx, { app, version, ...o }) {
    checkNames(app, version);
    const opts = runOptions(o);
    if (o.dryRun) return dryRunView(await dryRunStart(ctx.store, app, version, opts));
    await startRun(ctx.store, app, version, opts, audited(ctx, 'rollout.start', `${app}@${version}`, o));
    return describeLatest(ctx.store, app);
  },
};

export const rolloutRetry: Operation<RetryInput, RunStatusView | DryRunView> = {
  command: 'rollout retry',
  action: 'rollout.retry',
  role: 'operator',
  input: z.strictObject({ app: word, behind: toggle, ...runFlags }),
  async run(ctx, { app, behind, ...o }) {
    checkNames(app);
    const opts = runOptions(o);
    if (o.dryRun) return dryRunView(await dryRunRetry(ctx.store, app, opts, behind === true));
    await retryRun(ctx.store, app, opts, behind === true, audited(ctx, 'rollout.retry', app, { ...o, behind }));
    return describeLatest(ctx.store, app);
  },
};

export const rolloutStop: Operation<{ app: string }, RunStatusView> = {
  command: 'rollout stop',
  action: 'rollout.stop',
  role: 'operator',
  input: z.strictObject({ app: word }),
  async run(ctx, { app }) {
    checkNames(app);
    await stopRun(ctx.store, app, audited(ctx, 'rollout.stop', app));
    return describeLatest(ctx.store, app);
  },
};

function pauseOp(name: 'pause' | 'resume'): Operation<{ app: string }, RunStatusView> {
  return {
    command: `rollout ${name}`,
    action: `rollout.${name}`,
    role: 'operator',
    input: z.strictObject({ app: word }),
    async run(ctx, { app }) {
      checkNames(app);
      await pauseRun(ctx.store, app, name === 'pause', audited(ctx, `rollout.${name}`, app), ctx.actor.operator);
      return describeLatest(ctx.store, app);
    },
  };
}

export const rolloutPause = pauseOp('pause');
export const rolloutResume = pauseOp('resume');

export const rolloutStatus: Operation<{ app?: string }, { runs: RunStatusView[] }> = {
  command: 'rollout status',
  action: null,
  role: 'viewer',
  input: z.strictObject({ app: flag }),
  async run(ctx, { app }) {
    if (app) checkNames(app);
    const runs = await ctx.store.read(async (tx) => {
      const rows = app ? [await tx.runs.latest(app)].filter((r) => r !== null) : await tx.runs.latestAll();
      if (app && rows.length === 0) throw new StewardError('NOT_FOUND', `no rollout of ${app}`);
      const out: RunStatusView[] = [];
      for (const r of rows) out.push(await describeRun(tx, r));
      return out;
    });
    return { runs };
  },
};

// One run in `rollout list`: what its row records, without planning it (a page of runs of
// 100,000 nodes each stays cheap). A running run's status is the stored `running`; `rollout
// status` plans the latest one.
export interface RunSummary {
  id: number;
  app: string;
  version: string;
  status: RunRow['status'];
  paused: boolean;
  stopped: boolean;
  startedAt: number;
  endedAt: number | null;
  selector: string;
  retryOf: number | null;
  retryBehind: boolean;
  haltReason: { code: string; nodeId: string | null; message: string } | null;
}

const runCursorSchema = z.tuple([z.number().check(z.int(), z.positive())]);

export const rolloutList: Operation<{ app?: string; cursor?: string; limit?: string }, { runs: RunSummary[]; nextCursor: string | null }> = {
  command: 'rollout list',
  action: null,
  role: 'viewer',
  paged: 'runs',
  input: z.strictObject({ app: flag, cursor: flag, limit: flag }),
  async run(ctx, i) {
    if (i.app) checkNames(i.app);
    const at = decodeCursor(i.cursor, runCursorSchema);
    const limit = pageLimit(i.limit);
    const rows = await ctx.store.read((tx) => tx.runs.page(i.app ?? null, at ? at[0] : null, limit));
    const last = rows.length === limit ? rows[rows.length - 1] : undefined;
    return { runs: rows.map(summaryOf), nextCursor: last ? encodeCursor([last.id]) : null };
  },
};

function summaryOf(r: RunRow): RunSummary {
  return {
    id: r.id,
    app: r.app,
    version: r.version,
    status: r.status,
    paused: r.paused,
    stopped: r.stopped,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    selector: r.selector,
    retryOf: r.retryOf,
    retryBehind: r.behind,
    haltReason: r.haltCode ? { code: r.haltCode, nodeId: r.haltNodeId, message: r.haltMessage ?? '' } : null,
  };
}
