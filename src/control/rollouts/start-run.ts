// Starting, retrying, pausing, resuming and stopping rollout runs (docs/design.md §11): the checks, the
// targets frozen at the start, the first advance, all in one transaction. A dry run makes the
// same run in memory and plays the planner forward instead of writing.
import { StewardError } from '../../core/errors.js';
import { planEnded, planRollout, retryNodes, type PlanInput } from '../../core/rollout-planner.js';
import { simulateRollout, type Simulation } from '../../core/rollout-simulate.js';
import { matchesSelector, parseSelector } from '../../core/selector.js';
import type { ControlStore, NewRun, NodeRow, ReceiptFact, RunOwner, RunPolicy, RunRow, StoreReader, StoreTx } from '../store/store.js';
import { readHeartbeatSeconds } from '../store/settings.js';
import { emitRunEvent } from '../hooks/run-events.js';
import { advanceRun } from './advance-runs.js';
import { behindNodes } from './behind.js';
import { desiredChanged, inFlightNodes } from './desired-changed.js';
import { nobodyToAsk } from './nothing-to-ask.js';
import { nodeFacts, planRun, revertFacts, toRolloutRun } from './plan-run.js';
import { resolvePolicy, type RunOptions } from './run-options.js';

export { DEFAULT_VERDICT_TIMEOUT_MS, type RunOptions } from './run-options.js';

// A run about to start: its record, its frozen nodes, and the planner's input at its start.
export interface PreparedRun {
  run: NewRun;
  nodes: Array<{ nodeId: string; lastHeartbeatAt: number | null; listedApp: boolean }>;
  input: PlanInput;
  // Each node's hostname, as it enrolled, for what a person reads.
  hostnames: Record<string, string>;
}

// A dry run: the run it would start and the plan the planner would follow.
export interface DryRun {
  run: NewRun;
  simulation: Simulation;
  hostnames: Record<string, string>;
}

// Starts a run of `app` at `version` over the enrolled nodes that match the selector; refuses a
// second running run of the app (BUSY), a release not in the catalog, a selector that matches
// no node or a run that would ask none (NOT_FOUND, naming why each was left out), and a manifest that expires within the verdict timeout (MANIFEST_EXPIRED).
// `record` runs in the same transaction once the change is made (the audit log's entry).
export function startRun(store: ControlStore, app: string, version: string, opts: RunOptions, record?: RecordChange): Promise<RunRow> {
  return store.write(async (tx) => {
    await endIfOver(tx, app);
    return recorded(tx, await createRun(tx, await prepareStart(tx, app, version, opts)), record);
  });
}

// A running run whose plan has ended (halted, say, by a revert the ticker has not acted on yet:
// `rollout status` already shows it halted) is ended now, under its lock, so that a start or a
// retry right after is not refused BUSY for a run the operator sees over. A run that goes on
// stays running, and the start is refused: its transaction, and whatever this advance issued,
// roll back.
async function endIfOver(tx: StoreTx, app: string): Promise<void> {
  for (const running of await tx.runs.runningOf(app)) await advanceRun(tx, running.id);
}

// What startRun would do, written nowhere.
export function dryRunStart(store: ControlStore, app: string, version: string, opts: RunOptions): Promise<DryRun> {
  return store.read(async (tx) => dryRunOf(await prepareStart(tx, app, version, opts)));
}

// Starts a new run of the app's last run's version over the nodes it did not confirm (or, with
// `behind`, of its last succeeded run's version over the nodes behind it), with that run's
// policy and spent failure budget unless `opts` overrides them. Nothing left: NOTHING_TO_RETRY.
export function retryRun(store: ControlStore, app: string, opts: RunOptions, behind = false, record?: RecordChange): Promise<RunRow> {
  return store.write(async (tx) => {
    await endIfOver(tx, app);
    return recorded(tx, await createRun(tx, await prepareRetry(tx, app, opts, behind)), record);
  });
}

// What retryRun would do, written nowhere.
export function dryRunRetry(store: ControlStore, app: string, opts: RunOptions, behind = false): Promise<DryRun> {
  return store.read(async (tx) => dryRunOf(await prepareRetry(tx, app, opts, behind)));
}

// Stops the running runs of `app` (their issued attempts stay; nothing new is sent) and ends them.
// A target whose run is stopped shows it halted and starts no run until `target resume`. Returns
// the newest.
export function stopRun(store: ControlStore, app: string, record?: RecordChange): Promise<RunRow> {
  return store.write(async (tx) => {
    let newest: RunRow | null = null;
    for (const run of await lockActiveRuns(tx, app)) {
      await tx.runs.setStopped(run.id);
      await advanceRun(tx, run.id);
      const after = await recorded(tx, (await tx.runs.get(run.id)) as RunRow, record);
      newest ??= after;
    }
    return newest as RunRow;
  });
}

// Pauses (nothing new is issued; issued attempts keep their timeouts and verdicts) or resumes
// the running runs of `app`. A target's run is paused or resumed with its target, which would
// otherwise set the run back to its own state at the next tick. Idempotent. Returns the newest. A
// resume also answers each run's inconclusive judgements (docs/design.md §19): the step after one
// goes, on `by`'s word.
export function pauseRun(store: ControlStore, app: string, paused: boolean, record?: RecordChange, by: string | null = null): Promise<RunRow> {
  return store.write(async (tx) => {
    let newest: RunRow | null = null;
    for (const run of await lockActiveRuns(tx, app)) {
      const owner = await tx.targets.ownerOf(run.id);
      const target = owner?.kind === 'target' && owner.target ? await tx.targets.get(owner.target) : null;
      if (target && target.paused !== paused) await tx.targets.put({ ...target, paused });
      const answered = paused ? 0 : await tx.runs.resumeJudgements(run.id, await tx.now(), by);
      await setRunPaused(tx, run, paused);
      if (answered > 0 && !run.paused) await emitRunEvent(tx, 'run.resumed', run.id, answeredReason(answered, by));
      const after = await recorded(tx, (await tx.runs.get(run.id)) as RunRow, record);
      newest ??= after;
    }
    return newest as RunRow;
  });
}

// Pauses or resumes `run` (locked by the caller) in the caller's transaction, as `rollout
// pause|resume` and a target's pause do: the nodes in the middle of it hear of a change at once.
export async function setRunPaused(tx: StoreTx, run: Pick<RunRow, 'id' | 'paused'>, paused: boolean): Promise<void> {
  await tx.runs.setPaused(run.id, paused);
  const advance = await advanceRun(tx, run.id);
  if (advance && run.paused !== paused) await desiredChanged(tx, inFlightNodes(advance.plan));
  if (advance && run.paused !== paused) await emitRunEvent(tx, paused ? 'run.paused' : 'run.resumed', run.id);
}

// Why a run paused by its analysis goes on (a run.resumed event's reason).
export function answeredReason(answered: number, by: string | null): { code: string; message: string } {
  return { code: 'ANALYSIS_INCONCLUSIVE', message: `${answered} inconclusive judgement${answered === 1 ? '' : 's'} answered by ${by ?? 'an operator'}: the next step goes` };
}

// What a change of a run records in its own transaction (the audit log's entry).
export type RecordChange = (tx: StoreTx, run: RunRow) => Promise<void>;

async function recorded(tx: StoreTx, run: RunRow, record: RecordChange | undefined): Promise<RunRow> {
  await record?.(tx, run);
  return run;
}

// The running runs of `app`, once their advance locks are this transaction's. Why wait for them: a
// tick advancing a run now must finish (or roll back) first, so that nothing it issues comes
// after the caller's change (docs/design.md §13). A tick that committed meanwhile makes this
// transaction's snapshot stale; the store runs it again (a serialization failure).
async function lockActiveRuns(tx: StoreTx, app: string): Promise<RunRow[]> {
  const runs = await tx.runs.runningOf(app);
  if (runs.length === 0) throw new StewardError('NOT_FOUND', `no rollout of ${app} is running`);
  for (const run of runs) await tx.runs.lock(run.id);
  return runs;
}

async function prepareStart(tx: StoreReader, app: string, version: string, opts: RunOptions): Promise<PreparedRun> {
  const policy = resolvePolicy(opts);
  const sel = parseSelector(policy.selector);
  const all = await tx.nodes.list();
  for (const id of policy.namedCanaries) if (!all.some((n) => n.nodeId === id)) throw new StewardError('NOT_FOUND', `canary node ${id} is not enrolled`);
  const nodes = all.filter((n) => matchesSelector(sel, n.labels));
  if (nodes.length === 0) {
    throw new StewardError('NOT_FOUND', all.length === 0 ? `no node is enrolled; a rollout of ${app} ${version} would have nobody to update` : `the selector ${JSON.stringify(policy.selector)} matches none of the ${all.length} enrolled nodes`);
  }
  const prepared = await prepareRun(tx, app, version, nodes, { ...policy, failuresCarried: 0, behind: false, retryOf: null });
  // Nobody to ask (none listing the app and fresh, or every such node current or reverted it
  // before): refused, never a run that succeeds at once with nobody confirmed.
  const first = planRollout(prepared.input);
  if (first.counts.pending === 0) throw new StewardError('NOT_FOUND', nobodyToAsk(app, version, first, new Map(Object.entries(prepared.hostnames))));
  return prepared;
}

async function prepareRetry(tx: StoreReader, app: string, opts: RunOptions, behind: boolean): Promise<PreparedRun> {
  const last = await tx.runs.latest(app);
  if (!last) throw new StewardError('NOT_FOUND', `no rollout of ${app} to retry`);
  if (await goesOn(tx, last)) throw new StewardError('BUSY', `rollout ${last.id} of ${app} ${last.version} is still running; stop it first`);
  const base = behind ? await tx.runs.lastSucceeded(app) : last;
  if (!base) throw new StewardError('NOTHING_TO_RETRY', `no rollout of ${app} has succeeded; --behind retries the nodes behind the last succeeded one`);
  const basePlan = await planRun(tx, base, await tx.now());
  const ids = new Set(behind ? (await behindNodes(tx, base)).map((b) => b.nodeId) : retryNodes(basePlan));
  // A fresh seed, and no named canary unless named again: the last run's canaries confirmed.
  const { canarySeed: _seed, namedCanaries: _named, ...kept } = base;
  const policy = resolvePolicy(opts, kept);
  const sel = parseSelector(policy.selector);
  const nodes = (await tx.nodes.list()).filter((n) => ids.has(n.nodeId) && matchesSelector(sel, n.labels));
  const what = behind ? `no node is behind rollout ${base.id} of ${app} ${base.version}` : `every node of rollout ${last.id} of ${app} ${last.version} confirmed or already ran it`;
  if (nodes.length === 0) throw new StewardError('NOTHING_TO_RETRY', `${what}${opts.selector ? ` among those matching ${JSON.stringify(policy.selector)}` : ''}; nothing to retry`);
  const prepared = await prepareRun(tx, app, base.version, nodes, { ...policy, failuresCarried: basePlan.failures, behind, retryOf: base.id });
  const first = planRollout(prepared.input);
  if (first.counts.pending === 0) {
    throw new StewardError('NOTHING_TO_RETRY', `rollout ${base.id} left ${nodes.length} node${nodes.length === 1 ? '' : 's'}, and ${nobodyToAsk(base.app, base.version, first, new Map(Object.entries(prepared.hostnames)))}`);
  }
  return prepared;
}

// How a new run goes beside the app's running ones (docs/design.md §18): a one-shot run (and a
// pin run) goes alone; a target's run (or its revert run) goes beside other targets' runs of the
// app, over nodes none of them may still issue or has in flight (the caller leaves those out:
// nodesFreeOfOtherRuns), but not beside a one-shot or pin run.
export type RunLane = 'alone' | 'target';

// The checks and the run a start or retry over `nodes` would make at the store's time.
async function prepareRun(tx: StoreReader, app: string, version: string, nodes: NodeRow[], policy: RunPolicy, lane: RunLane = 'alone'): Promise<PreparedRun> {
  const now = await tx.now();
  for (const running of await tx.runs.runningOf(app)) {
    if (lane === 'target' && isTargetRun(await tx.targets.ownerOf(running.id))) continue;
    if (!(await goesOn(tx, running))) continue;
    const owner = await tx.targets.ownerOf(running.id);
    const whose = owner?.target ? ` (target ${owner.target})` : '';
    throw new StewardError('BUSY', lane === 'target' ? `rollout ${running.id} of ${app} ${running.version} is running, a one-shot or pin run, which goes alone; the target's run starts when it ends` : `rollout ${running.id}${whose} of ${app} ${running.version} is running; a one-shot run goes alone (stop it first${owner?.target ? `, or pause its target: \`target pause ${owner.target}\`` : ''})`);
  }
  const release = await tx.releases.get(app, version);
  if (!release) throw new StewardError('NOT_FOUND', `${app} ${version} is not in the catalog (\`steward-control release add\`)`);
  if (release.expires <= now + policy.verdictTimeoutMs) {
    throw new StewardError('MANIFEST_EXPIRED', `the manifest of ${app} ${version} expires at ${new Date(release.expires).toISOString()}, within the verdict timeout; re-run \`release add\` to sign a fresh one`);
  }
  const run: NewRun = { app, version, startedAt: now, heartbeatIntervalMs: (await readHeartbeatSeconds(tx)) * 1000, ...policy };
  const frozen = nodes.map((n) => ({ nodeId: n.nodeId, lastHeartbeatAt: n.lastHeartbeatAt, listedApp: n.apps.some((a) => a.name === app) }));
  const ids = new Set(frozen.map((f) => f.nodeId));
  const reverts = (await tx.receipts.revertsOfApp(app)).filter((r) => ids.has(r.nodeId));
  const byNode = new Map<string, ReceiptFact[]>();
  for (const r of reverts) byNode.set(r.nodeId, [...(byNode.get(r.nodeId) ?? []), r]);
  const facts = nodes.map((n, i) => nodeFacts({ ...frozen[i]!, app: n.apps.find((a) => a.name === app) ?? null, clockSkewRefusedSince: n.clockSkewRefused?.since ?? null }, byNode.get(n.nodeId) ?? []));
  const input: PlanInput = { run: toRolloutRun({ ...run, id: null, stopped: false, paused: false, status: 'running', haltCode: null, haltNodeId: null, haltMessage: null, endedAt: null }), nodes: facts, issued: [], verdicts: [], reverts: revertFacts(reverts), now };
  const first = planRollout(input);
  for (const id of policy.namedCanaries) {
    const s = first.nodes[id];
    if (s?.state !== 'pending') throw new StewardError('NOT_FOUND', `canary node ${id} is not a node this run would ask: ${s ? `${s.state}${s.reason ? ` (${s.reason})` : ''}` : 'not selected'}`);
  }
  return { run, nodes: frozen, input, hostnames: Object.fromEntries(nodes.map((n) => [n.nodeId, n.hostname])) };
}

// Whether a run still goes on: it is running and its plan has not ended. A start or retry ends
// a run whose plan is over before it prepares (endIfOver), so there only a run that goes on is
// still running; a dry run writes nothing and cannot end it, so it is told the same here: right
// after a halt, the dry run shows the plan the real start would make, not BUSY.
async function goesOn(tx: StoreReader, run: RunRow): Promise<boolean> {
  if (run.status !== 'running') return false;
  return !planEnded((await planRun(tx, run, await tx.now())).status);
}

async function createRun(tx: StoreTx, p: PreparedRun): Promise<RunRow> {
  const id = await tx.runs.insert(p.run, p.nodes);
  await emitRunEvent(tx, 'run.started', id);
  await advanceRun(tx, id);
  return (await tx.runs.get(id)) as RunRow;
}

// Starts a run that a target (or the node pins) owns, inside the caller's transaction, over
// `nodes` with `policy`, and records its owner. Null when the run would ask nobody (every node
// current, or excluded): no run is made. Refuses as a start does (BUSY, NOT_FOUND for a release
// not in the catalog, MANIFEST_EXPIRED).
export async function startOwnedRun(tx: StoreTx, app: string, version: string, nodes: NodeRow[], policy: RunPolicy, owner: Omit<RunOwner, 'runId'>): Promise<RunRow | null> {
  const lane: RunLane = isTargetRun(owner) ? 'target' : 'alone';
  if (lane === 'target') nodes = await nodesFreeOfOtherRuns(tx, app, nodes);
  if (nodes.length === 0) return null;
  const prepared = await prepareRun(tx, app, version, nodes, policy, lane);
  if (planRollout(prepared.input).counts.pending === 0) return null;
  const id = await tx.runs.insert(prepared.run, prepared.nodes);
  await tx.targets.linkRun({ runId: id, ...owner });
  await emitRunEvent(tx, 'run.started', id);
  await advanceRun(tx, id);
  return (await tx.runs.get(id)) as RunRow;
}

// What startOwnedRun would start, written nowhere (a target's dry run).
export async function dryRunOwned(tx: StoreReader, app: string, version: string, nodes: NodeRow[], policy: RunPolicy): Promise<DryRun> {
  return dryRunOf(await prepareRun(tx, app, version, nodes, policy, 'target'));
}

// A run a target started (to converge, or its revert): one that may go beside other targets' runs.
export function isTargetRun(owner: Pick<RunOwner, 'kind'> | null): boolean {
  return owner !== null && (owner.kind === 'target' || owner.kind === 'revert');
}

// What the app's running runs may still issue, or have in flight, on each node: a node pending or
// issued in one of them is that run's until it decides (docs/design.md §18: one attempt of an app
// in flight on a node at a time).
export async function nodesInOtherRuns(tx: StoreReader, app: string, except: ReadonlySet<number> = new Set()): Promise<Map<string, { runId: number; version: string; state: 'pending' | 'issued'; target: string | null }>> {
  const out = new Map<string, { runId: number; version: string; state: 'pending' | 'issued'; target: string | null }>();
  const now = await tx.now();
  for (const run of await tx.runs.runningOf(app)) {
    if (except.has(run.id)) continue;
    const plan = await planRun(tx, run, now);
    if (planEnded(plan.status)) continue;
    const owner = await tx.targets.ownerOf(run.id);
    for (const [nodeId, p] of Object.entries(plan.nodes)) {
      if ((p.state === 'pending' || p.state === 'issued') && !out.has(nodeId)) out.set(nodeId, { runId: run.id, version: run.version, state: p.state, target: owner?.target ?? null });
    }
  }
  return out;
}

async function nodesFreeOfOtherRuns(tx: StoreReader, app: string, nodes: NodeRow[]): Promise<NodeRow[]> {
  const taken = await nodesInOtherRuns(tx, app);
  return taken.size === 0 ? nodes : nodes.filter((n) => !taken.has(n.nodeId));
}

function dryRunOf(p: PreparedRun): DryRun {
  return { run: p.run, simulation: simulateRollout(p.input), hostnames: p.hostnames };
}
