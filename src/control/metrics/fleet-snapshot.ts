// The fleet-wide facts behind the metrics' gauges (docs/design.md §12), read from the store, not from
// what this instance saw: two instances on one store report the same values. A scrape reads
// them at most once per `cacheMs` (scrapes arriving together share one read), so a scrape storm
// costs the store one read transaction per period.
import { freshSince } from '../../core/heartbeat-freshness.js';
import type { NodeState } from '../../core/rollout-planner.js';
import { logger } from '../../platform/log.js';
import { planRun } from '../rollouts/plan-run.js';
import { readHeartbeatSeconds } from '../store/settings.js';
import type { AppVersionCount, ControlStore, FreshnessCounts, StoredRunStatus, StoreReader } from '../store/store.js';
import { appLabel, boundAppVersions } from './label-values.js';
import { BEHIND_REASONS, type BehindReasonName, type TargetNodeState } from '../../core/target-plan.js';
import { readTarget } from '../targets/read-target.js';
import { TARGET_NAME_RE } from '../targets/set-target.js';
import { METADATA_STALE_AFTER_MS } from '../trust/freshness.js';

const log = logger('control:metrics');

export const RUN_STATUSES: readonly StoredRunStatus[] = ['running', 'succeeded', 'halted', 'stopped'];

export interface FleetSnapshot {
  // Fresh: a heartbeat within 3 intervals (core/heartbeat-freshness.ts, the rollouts' rule: a
  // node silent for longer is skipped by a run that starts, docs/design.md §9).
  nodes: FreshnessCounts;
  // Nodes whose heartbeats are refused for clock skew now.
  clockSkewRefused: number;
  // Nodes whose TUF metadata is stale while the fleet has a repository (docs/design.md §21.2).
  metadataStale: number;
  // Bounded (label-values.ts): at most a few hundred rows whatever nodes report.
  appVersions: AppVersionCount[];
  runs: Record<StoredRunStatus, number>;
  // Per app with a run that has not ended: its nodes by the planner's state now.
  runNodes: Array<{ app: string; states: Partial<Record<NodeState, number>> }>;
  // Per target (the first MAX_TARGETS by name; the rest summed as `_other`): its selected nodes
  // by state, and those behind by their one reason (docs/design.md §18).
  targets: Array<{ target: string; states: Record<TargetNodeState, number>; behind: Record<BehindReasonName, number> }>;
}

// Targets with series of their own; more are summed under OTHER_TARGET.
export const MAX_TARGETS = 100;
export const OTHER_TARGET = '_other';

// Each target's nodes by state and reason, read and planned now (as `target status` does).
async function readTargetGauges(tx: StoreReader, now: number): Promise<FleetSnapshot['targets']> {
  const targets = await tx.targets.list();
  if (targets.length === 0) return [];
  const pre = { targets, nodes: await tx.nodes.list(), pins: await tx.pins.list() };
  const out = new Map<string, FleetSnapshot['targets'][number]>();
  for (const [i, t] of targets.entries()) {
    // A name from the store is checked before it becomes a label value.
    const name = i < MAX_TARGETS && TARGET_NAME_RE.test(t.name) ? t.name : OTHER_TARGET;
    const entry = out.get(name) ?? { target: name, states: { current: 0, behind: 0 }, behind: Object.fromEntries(BEHIND_REASONS.map((r) => [r, 0])) as Record<BehindReasonName, number> };
    for (const n of (await readTarget(tx, t, now, pre)).plan.nodes) {
      entry.states[n.state]++;
      if (n.reason) entry.behind[n.reason.reason]++;
    }
    out.set(name, entry);
  }
  return [...out.values()];
}

// Reads the snapshot in one read transaction, at the store's time.
export async function readFleetSnapshot(tx: StoreReader): Promise<FleetSnapshot> {
  const now = await tx.now();
  const since = freshSince(now, (await readHeartbeatSeconds(tx)) * 1000);
  const runs = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<StoredRunStatus, number>;
  for (const r of await tx.runs.countByStatus()) if (r.status in runs) runs[r.status] = r.runs;
  const runNodes: FleetSnapshot['runNodes'] = [];
  // Why the planner: a node's state in a run (issued, confirmed, reverted ...) is what the
  // planner makes of the recorded facts, not a column; the tick plans every such run anyway.
  // Runs of several targets of one app may go at once (docs/design.md §18): their nodes add up
  // under the app's label, one series per app and state.
  const byApp = new Map<string, Partial<Record<NodeState, number>>>();
  for (const run of await tx.runs.activeAll()) {
    const app = appLabel(run.app);
    const states = byApp.get(app) ?? {};
    for (const n of Object.values((await planRun(tx, run, now)).nodes)) states[n.state] = (states[n.state] ?? 0) + 1;
    byApp.set(app, states);
  }
  for (const [app, states] of byApp) runNodes.push({ app, states });
  return {
    nodes: await tx.nodes.countByFreshness(since),
    clockSkewRefused: await tx.nodes.countClockSkewRefused(),
    metadataStale: (await tx.trust.latest('timestamp')) === null ? 0 : await tx.nodes.countMetadataStale(METADATA_STALE_AFTER_MS / 1000),
    appVersions: boundAppVersions(await tx.nodes.countByAppVersion()),
    runs,
    runNodes,
    targets: await readTargetGauges(tx, now),
  };
}

export interface FleetSnapshots {
  // The snapshot at most `cacheMs` old, or null when the store did not answer (the error is
  // counted and logged). Never rejects.
  get(): Promise<FleetSnapshot | null>;
}

// Snapshots of `store` cached for `cacheMs` on the monotonic `now` (ms).
export function cachedFleetSnapshots(store: ControlStore, opts: { cacheMs: number; now: () => number; onError: () => void }): FleetSnapshots {
  let last: { at: number; value: FleetSnapshot | null } | null = null;
  let reading: Promise<FleetSnapshot | null> | null = null;
  return {
    get() {
      if (last && opts.now() - last.at < opts.cacheMs) return Promise.resolve(last.value);
      reading ??= store
        .read(readFleetSnapshot)
        .catch((err: unknown) => {
          log('fleet gauges left out of this scrape: the store did not answer: %s', (err as Error)?.message ?? String(err));
          opts.onError();
          return null;
        })
        .then((value) => {
          last = { at: opts.now(), value };
          reading = null;
          return value;
        });
      return reading;
    },
  };
}
