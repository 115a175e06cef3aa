// A run with enforced analysis played at the planner and judgement level, without HTTP or a store
// (docs/design.md §19): the pure planner (src/core/rollout-planner.ts) on a simulated clock, every
// node it issues confirming the next minute, each node's signals simulated a minute at a time
// (test/helpers/signal-noise.ts), and each due step judged by the real judgement
// (judgeCohorts over cohortInput, what judgeStep does after its store read) and handed back to the
// planner as the ticker records it. Cheap enough to play a hundred runs in a test.
import { planRollout, type Issued, type NodeFacts, type StepJudgementFact, type VerdictFact } from '../../src/core/rollout-planner.js';
import { judgeCohorts } from '../../src/control/analysis/judge-cohorts.js';
import { cohortInput } from '../../src/control/analysis/judge-step.js';
import type { Judgement } from '../../src/control/analysis/judgement.js';
import { defaultAnalysisPolicy } from '../../src/control/analysis/policy.js';
import type { SignalSample } from '../../src/control/store/store.js';
import { mulberry32 } from './prng.js';
import { loadFactor, poisson, type NodeBehaviour } from './signal-noise.js';

const MINUTE = 60_000;
const T0 = 1_800_000_000_000;

export interface RunSimOptions {
  seed: number;
  nodes: number;
  // Batch size in nodes (no canaries: the first batch is the first step judged).
  batch: number;
  windowMs: number;
  old: NodeBehaviour;
  next: NodeBehaviour;
  // Stop after this many simulated minutes.
  maxMinutes?: number;
  // Called around each judgement (the bench counts their CPU).
  onJudge?: (judge: () => Judgement) => Judgement;
}

export interface RunSimResult {
  status: string;
  haltCode: string | null;
  haltMessage: string | null;
  // Minutes from the first batch's issue to the end (halt or success), or null if not ended.
  minutesToEnd: number | null;
  batchesIssued: number;
  judgements: Array<{ step: number; verdict: Judgement['verdict'] }>;
}

// Plays one run to its end (or maxMinutes).
export function simulateAnalysedRun(o: RunSimOptions): RunSimResult {
  const rand = mulberry32(o.seed);
  const ids = Array.from({ length: o.nodes }, (_, i) => `n${String(i).padStart(5, '0')}`);
  const current = new Map(ids.map((id) => [id, '1.0.0']));
  const counters = new Map(ids.map((id) => [id, { restarts: 0, liveness: 0, requests: 10_000, errors: 10, load: loadFactor(rand) }]));
  const samples = new Map<string, SignalSample[]>(ids.map((id) => [id, []]));
  const issued: Issued[] = [];
  const verdicts: VerdictFact[] = [];
  const judgements: StepJudgementFact[] = [];
  const result: RunSimResult['judgements'] = [];
  const facts = (): NodeFacts[] => ids.map((nodeId) => ({ nodeId, lastHeartbeatAt: T0 - 10_000, listedApp: true, current: current.get(nodeId)!, supervisor: { state: 'running', since: T0 - 3_600_000 }, revertedVersions: [], clockSkewRefusedSince: null }));
  const policy = { ...defaultAnalysisPolicy('enforce'), windowMs: o.windowMs };
  let firstIssue: number | null = null;
  const maxMinutes = o.maxMinutes ?? 600;
  for (let m = 0; m <= maxMinutes; m++) {
    const now = T0 + m * MINUTE;
    // The nodes issued last minute confirm now and run the new version.
    for (const i of issued) if (i.issuedAt === now - MINUTE) {
      verdicts.push({ nodeId: i.nodeId, attemptId: i.attemptId, outcome: 'active', reasonCode: null, at: now });
      current.set(i.nodeId, '1.1.0');
    }
    // Each node's sample of this minute.
    for (const id of ids) {
      const version = current.get(id)!;
      const b = version === '1.1.0' ? o.next : o.old;
      const c = counters.get(id)!;
      c.restarts += poisson(rand, b.restartsPerHour / 60);
      c.liveness += poisson(rand, b.livenessPerHour / 60);
      const req = b.requestsPerMinute === null ? 0 : poisson(rand, b.requestsPerMinute * c.load);
      c.requests += req;
      c.errors += poisson(rand, req * b.errorRatio);
      samples.get(id)!.push({
        nodeId: id, app: 'web', minute: now, at: now, version, since: T0 - 3_600_000, restarts: c.restarts, livenessFailures: c.liveness, watchdogKills: 0, oomKills: 0,
        cpuSeconds: m * 0.5, rssBytes: 50e6, requests: b.requestsPerMinute === null ? null : c.requests, errors: b.requestsPerMinute === null ? null : c.errors, scrape: null,
      });
    }
    const input = () => ({
      run: { id: 'sim', app: 'web', version: '1.1.0', startedAt: T0, heartbeatIntervalMs: MINUTE, stopped: false, paused: false, policy: {
        canaries: 0, namedCanaries: [], canarySeed: 1, batch: { count: o.batch }, bakeMs: 0, maxFailures: 0, failuresCarried: 0, maxRefused: { percent: 100 },
        maxFetchFailures: { percent: 100 }, verdictTimeoutMs: 30 * MINUTE, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null } },
      nodes: facts(), issued, verdicts, reverts: [], now, analysis: { mode: 'enforce' as const, windowMs: o.windowMs, judgements },
    });
    let plan = planRollout(input());
    if (plan.analysisDue.length > 0) {
      for (const d of plan.analysisDue) {
        const window = (list: readonly string[]) => list.flatMap((id) => samples.get(id)!.filter((s) => s.at >= d.from && s.at < d.to));
        const judge = () => judgeCohorts({ canary: cohortInput(d.canary, window(d.canary), '1.1.0'), baseline: cohortInput(d.baseline, window(d.baseline)), from: d.from, to: d.to, policy });
        const j = o.onJudge ? o.onJudge(judge) : judge();
        judgements.push({ step: d.step, verdict: j.verdict, at: now, summary: j.summary, resumed: false });
        result.push({ step: d.step, verdict: j.verdict });
      }
      plan = planRollout(input());
    }
    if (plan.issue) {
      firstIssue ??= now;
      for (const nodeId of plan.issue.nodes) issued.push({ nodeId, attemptId: `a-${nodeId}`, issuedAt: now, notAfter: null, batch: plan.issue.batch });
    }
    if (plan.status === 'halted' || plan.status === 'succeeded' || plan.status === 'paused') {
      return {
        status: plan.status, haltCode: plan.haltReason?.code ?? plan.pauseReason?.code ?? null, haltMessage: plan.haltReason?.message ?? plan.pauseReason?.message ?? null,
        minutesToEnd: firstIssue === null ? null : (now - firstIssue) / MINUTE, batchesIssued: new Set(issued.map((i) => i.batch)).size, judgements: result,
      };
    }
  }
  return { status: 'running', haltCode: null, haltMessage: null, minutesToEnd: null, batchesIssued: new Set(issued.map((i) => i.batch)).size, judgements: result };
}
