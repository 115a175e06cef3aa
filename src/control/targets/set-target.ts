// `target set|pause|resume|remove` (docs/design.md §18): the checks, the change and the first reconcile
// step, in one transaction, so that a refused change leaves nothing half-applied.
import { emitRunEvent } from '../hooks/run-events.js';
import { emitTargetSet, recordTargetStatus } from '../hooks/target-events.js';
import { ANALYSIS_OFF } from '../../core/run-analysis.js';
import { StewardError } from '../../core/errors.js';
import { matchesSelector, parseSelector } from '../../core/selector.js';
import { planTarget } from '../../core/target-plan.js';
import { advanceRun } from '../rollouts/advance-runs.js';
import { resolvePolicy, type RunOptions } from '../rollouts/run-options.js';
import { planRun } from '../rollouts/plan-run.js';
import { answeredReason, dryRunOwned, startOwnedRun, type DryRun } from '../rollouts/start-run.js';
import type { ControlStore, StoreReader, StoreTx, TargetPolicy, TargetRow, NodeRow } from '../store/store.js';
import { readTarget, type TargetReading } from './read-target.js';
import { ownActiveRun, reconcileTarget, targetRunPolicy } from './reconcile-target.js';

export const TARGET_NAME_RE = /^[a-z][a-z0-9._-]{0,62}$/;
export const MAX_PRIORITY = 1_000_000;

export interface SetTarget {
  name: string;
  app: string;
  version: string;
  priority: number;
  opts: RunOptions;
  by: string | null;
}

// What the change did, or would do (a dry run), for what a person reads.
export interface SetOutcome {
  reading: TargetReading;
  // Sentences about what happens next: a selector that matches nobody yet, a run it waits for.
  notes: string[];
  // A dry run: the run the target would start now, or null.
  dryRun: DryRun | null;
}

export function checkTargetName(name: string): void {
  if (!TARGET_NAME_RE.test(name)) throw new StewardError('USAGE', `${JSON.stringify(name)} is not a target name ([a-z][a-z0-9._-]{0,62})`);
}

// The target row `set` would write, checked against the catalog and the other targets.
async function prepareSet(tx: StoreReader, s: SetTarget): Promise<{ row: TargetRow; previous: TargetRow | null; targets: TargetRow[] }> {
  checkTargetName(s.name);
  if (!Number.isSafeInteger(s.priority) || Math.abs(s.priority) > MAX_PRIORITY) throw new StewardError('USAGE', `--priority ${s.priority} is not an integer from -${MAX_PRIORITY} to ${MAX_PRIORITY}`);
  const { canarySeed: _seed, ...resolved } = resolvePolicy(s.opts);
  const policy: TargetPolicy = resolved;
  const now = await tx.now();
  const release = await tx.releases.get(s.app, s.version);
  if (!release) throw new StewardError('NOT_FOUND', `${s.app} ${s.version} is not in the catalog (\`steward-control release add\`)`);
  if (release.expires <= now + policy.verdictTimeoutMs) {
    throw new StewardError('MANIFEST_EXPIRED', `the manifest of ${s.app} ${s.version} expires at ${new Date(release.expires).toISOString()}, within the verdict timeout; re-run \`release add\` to sign a fresh one`);
  }
  const all = await tx.nodes.list();
  for (const id of policy.namedCanaries) if (!all.some((n) => n.nodeId === id)) throw new StewardError('NOT_FOUND', `canary node ${id} is not enrolled`);
  const previous = await tx.targets.get(s.name);
  if (previous && previous.app !== s.app) throw new StewardError('USAGE', `target ${s.name} is of ${previous.app}, not ${s.app}; \`target remove ${s.name}\` first`);
  const others = (await tx.targets.list()).filter((t) => t.name !== s.name);
  // An equal overlap: a node that this target and another of the app at the same priority both select now.
  const own = parseSelector(policy.selector);
  for (const t of others) {
    if (t.app !== s.app || t.priority !== s.priority) continue;
    const theirs = parseSelector(t.policy.selector);
    const both = all.filter((n) => matchesSelector(own, n.labels) && matchesSelector(theirs, n.labels)).map((n) => n.nodeId);
    // The same selector overlaps whatever is enrolled now.
    if (both.length === 0 && theirs.text === own.text) {
      throw new StewardError('TARGET_CONFLICT', `target ${t.name} (${t.app} ${t.version}, --priority ${t.priority}) has the same selector ${JSON.stringify(own.text)}; give one of them a higher --priority`);
    }
    if (both.length > 0) {
      throw new StewardError(
        'TARGET_CONFLICT',
        `target ${t.name} (${t.app} ${t.version}, --priority ${t.priority}) also selects ${both.slice(0, 5).join(', ')}${both.length > 5 ? ` and ${both.length - 5} more` : ''}; give one of them a higher --priority or narrow a --select`,
      );
    }
  }
  // A new version clears a halt (and the failures of the old version's runs).
  const cleared = !previous ? 0 : previous.version !== s.version ? Math.max(previous.clearedRunId, ...(await tx.targets.runs(s.name)).map((o) => o.runId)) : previous.clearedRunId;
  const row: TargetRow = { name: s.name, app: s.app, version: s.version, priority: s.priority, policy, paused: previous?.paused ?? false, setAt: now, setBy: s.by, clearedRunId: cleared };
  return { row, previous, targets: [...others, row] };
}

function notesOf(r: TargetReading, previous: TargetRow | null): string[] {
  const notes: string[] = [];
  const t = r.target;
  if (r.plan.nodes.length === 0) {
    notes.push(`the selector ${JSON.stringify(t.policy.selector)} matches no enrolled node now; the target waits, and converges each node that matches later`);
  }
  if (previous && previous.version !== t.version) notes.push(`the version changed from ${previous.version}: the target's run of ${previous.version}, if any, is stopped and a new run starts`);
  if (r.input.otherRun) notes.push(`rollout ${r.input.otherRun.id} of ${t.app} ${r.input.otherRun.version} is running; the target's run starts when it ends (one run per app)`);
  if (t.paused) notes.push(`target ${t.name} is paused; \`target resume ${t.name}\` lets it converge`);
  return notes;
}

// Sets a target (creates it or changes it) and takes its first reconcile step.
export function setTarget(store: ControlStore, s: SetTarget, record: (tx: StoreTx, t: TargetRow) => Promise<void>): Promise<SetOutcome> {
  return store.write(async (tx) => {
    const { row, previous } = await prepareSet(tx, s);
    await tx.targets.put(row);
    await record(tx, row);
    await emitTargetSet(tx, row, previous);
    const reading = (await reconcileTarget(tx, row.name)) as TargetReading;
    await recordTargetStatus(tx, reading);
    return { reading, notes: notesOf(reading, previous), dryRun: null };
  });
}

// What setTarget would do, written nowhere: the nodes, their reasons, and the run it would start.
export function dryRunSetTarget(store: ControlStore, s: SetTarget): Promise<SetOutcome> {
  return store.read(async (tx) => {
    const { row, previous, targets } = await prepareSet(tx, s);
    const now = await tx.now();
    const reading = await readTarget(tx, row, now, { targets, nodes: await tx.nodes.list(), pins: await tx.pins.list() });
    // The target's own run of another version would be stopped first, not waited for.
    if (reading.ownRun && reading.ownRun.version !== row.version && reading.input.otherRun?.id === reading.ownRun.id) {
      reading.input.otherRun = null;
      reading.plan = planTarget(reading.input);
    }
    let dryRun: DryRun | null = null;
    if (reading.plan.start) {
      const nodes = reading.plan.start.map((id) => reading.nodes.get(id)).filter((n) => n !== undefined);
      const followUp = (await tx.targets.runs(row.name)).some((o) => o.kind === 'target' && o.runId > row.clearedRunId);
      const policy = targetRunPolicy(row, followUp);
      const asked = new Set(reading.plan.start);
      dryRun = await dryRunOwned(tx, row.app, row.version, nodes, { ...policy, namedCanaries: policy.namedCanaries.filter((id) => asked.has(id)) });
    }
    return { reading, notes: notesOf(reading, previous), dryRun };
  });
}

async function mustGet(tx: StoreReader, name: string): Promise<TargetRow> {
  checkTargetName(name);
  const t = await tx.targets.get(name);
  if (!t) throw new StewardError('NOT_FOUND', `no target ${name} (\`target list\`)`);
  return t;
}

// Pauses a target (its run issues nothing new; nothing new starts) or resumes it. Resume also
// clears a halt and the failures of its runs so far: their nodes are issued again; and it answers
// its running run's inconclusive judgements (docs/design.md §19), on `by`'s word.
export function pauseTarget(store: ControlStore, name: string, paused: boolean, record: (tx: StoreTx, t: TargetRow) => Promise<void>, by: string | null = null): Promise<TargetReading> {
  return store.write(async (tx) => {
    const t = await mustGet(tx, name);
    const own = paused ? null : await ownActiveRun(tx, name);
    if (own) {
      await tx.runs.lock(own.id);
      const answered = await tx.runs.resumeJudgements(own.id, await tx.now(), by);
      if (answered > 0 && !own.paused) await emitRunEvent(tx, 'run.resumed', own.id, answeredReason(answered, by));
    }
    const last = (await tx.targets.runs(name))[0];
    const run = last ? await tx.runs.get(last.runId) : null;
    const clearedRunId = !paused && run && run.status !== 'running' ? Math.max(t.clearedRunId, run.id) : t.clearedRunId;
    const row = { ...t, paused, clearedRunId };
    await tx.targets.put(row);
    await record(tx, row);
    return (await reconcileTarget(tx, name)) as TargetReading;
  });
}

// Removes a target and stops its running run (attempts already sent keep their verdicts).
export function removeTarget(store: ControlStore, name: string, record: (tx: StoreTx, t: TargetRow, stoppedRunId: number | null) => Promise<void>): Promise<{ removed: string; stoppedRun: number | null }> {
  return store.write(async (tx) => {
    const t = await mustGet(tx, name);
    const run = await ownActiveRun(tx, name);
    if (run) {
      await tx.runs.lock(run.id);
      await tx.runs.setStopped(run.id);
      await advanceRun(tx, run.id);
    }
    await tx.targets.remove(name);
    await record(tx, t, run?.id ?? null);
    return { removed: name, stoppedRun: run?.id ?? null };
  });
}

// A target read and planned now (`target status`).
export function readTargetNow(store: ControlStore, name: string): Promise<TargetReading> {
  return store.read(async (tx) => readTarget(tx, await mustGet(tx, name), await tx.now()));
}

// Every target read and planned now (`target list`).
export function readTargetsNow(store: ControlStore): Promise<TargetReading[]> {
  return store.read(async (tx) => {
    const now = await tx.now();
    const pre = { targets: await tx.targets.list(), nodes: await tx.nodes.list(), pins: await tx.pins.list() };
    const out: TargetReading[] = [];
    for (const t of pre.targets) out.push(await readTarget(tx, t, now, pre));
    return out;
  });
}

// What `target revert` did: the target after it, and the revert runs it started, one per version
// the nodes ran before (side by side, over disjoint nodes).
export interface RevertOutcome {
  reading: TargetReading;
  reverts: Array<{ runId: number; to: string; nodes: string[] }>;
  // Nodes the last run changed that have no version to go back to (it installed the app first).
  leftOut: string[];
}

// Takes the nodes the target's last run changed (it confirmed them, and they still run its
// version) back to the version each ran before, through the helper's rollback to `previous`
// (docs/design.md §18): a revert run in the target's batches and windows, without canaries or
// bake. Nodes that ran different versions before go back each to its own: one revert run per
// version, side by side. A node the run installed the app on first has nothing to go back to and is
// left out (named in the answer). The target is paused, so that it does not converge them forward
// again; `target resume` does. Refused: nothing to revert (NOT_FOUND), a one-shot run of the app
// going (BUSY), a version before not in the catalog (NOT_FOUND): then nothing is started.
export function revertTarget(store: ControlStore, name: string, record: (tx: StoreTx, t: TargetRow, runId: number, to: string, nodes: string[]) => Promise<void>): Promise<RevertOutcome> {
  return store.write(async (tx) => {
    const t = await mustGet(tx, name);
    const last = (await tx.targets.runs(name)).find((o) => o.kind === 'target');
    const run = last ? await tx.runs.get(last.runId) : null;
    if (!run) throw new StewardError('NOT_FOUND', `target ${name} has started no run; there is nothing to revert`);
    const now = await tx.now();
    const plan = await planRun(tx, run, now);
    const before = new Map<string, string | null>();
    for (const r of await tx.receipts.countingForRun(run.id)) if (r.outcome === 'active') before.set(r.nodeId, r.fromVersion);
    const nodes = (await tx.nodes.list()).filter((n) => plan.nodes[n.nodeId]?.state === 'confirmed' && n.apps.find((a) => a.name === run.app)?.current === run.version);
    if (nodes.length === 0) throw new StewardError('NOT_FOUND', `no node that rollout ${run.id} of target ${name} changed runs ${run.app} ${run.version} now; there is nothing to revert`);
    const versions = new Map<string, NodeRow[]>();
    const leftOut: string[] = [];
    for (const n of nodes) {
      const v = before.get(n.nodeId) ?? null;
      if (v === null) leftOut.push(n.nodeId);
      else versions.set(v, [...(versions.get(v) ?? []), n]);
    }
    if (versions.size === 0) {
      throw new StewardError('NOT_FOUND', `rollout ${run.id} of target ${name} installed ${run.app} first on every node it changed (${leftOut.slice(0, 5).join(', ')}${leftOut.length > 5 ? ` and ${leftOut.length - 5} more` : ''}): there is no version to go back to`);
    }
    for (const v of versions.keys()) {
      if (!(await tx.releases.get(run.app, v))) throw new StewardError('NOT_FOUND', `${run.app} ${v}, which ${versions.get(v)!.length} of the nodes ran before, is not in the catalog (\`steward-control release add\`); nothing was reverted`);
    }
    if (run.status === 'running') {
      await tx.runs.lock(run.id);
      await tx.runs.setStopped(run.id);
      await advanceRun(tx, run.id);
    }
    // No analysis: a revert goes back to what ran before, judged by the operator who asked for it.
    const policy = { ...targetRunPolicy(t, true), bakeMs: 0, allowRetryReverted: true, startAt: null, analysis: ANALYSIS_OFF };
    const reverts: RevertOutcome['reverts'] = [];
    // The largest group first: its run is the one `revertRun` names.
    for (const [to, group] of [...versions].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))) {
      const started = await startOwnedRun(tx, t.app, to, group, policy, { kind: 'revert', target: name });
      if (!started) continue;
      const ids = group.map((n) => n.nodeId);
      await record(tx, t, started.id, to, ids);
      reverts.push({ runId: started.id, to, nodes: ids });
    }
    if (reverts.length === 0) throw new StewardError('NOT_FOUND', `none of the nodes rollout ${run.id} changed would be asked to go back (${[...versions.keys()].join(', ')})`);
    await tx.targets.put({ ...t, paused: true });
    return { reading: await readTarget(tx, { ...t, paused: true }, now), reverts, leftOut };
  });
}
