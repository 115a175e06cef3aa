// Row 17 (issue 17): what a rollout costs as the fleet grows. Two figures for 1,000, 10,000 and
// 100,000 nodes: the pure planner's time for one plan of a run in the middle of a batch (what
// every tick costs it), and the control plane's time to advance that run once on its SQLite
// store (the tick's transaction: read the run's nodes, attempts and receipts, plan, write
// nothing new). Both are printed per node: the target is a cost per node that stays flat, the
// 100,000-node figure within twice the 1,000-node one.
//
//   node dist/bench/rollout-advance.js [--quick] [--json] [--runs N] [--sizes 1000,10000,100000]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { advanceRun } from '../src/control/rollouts/advance-runs.js';
import { readPlanInput } from '../src/control/rollouts/plan-run.js';
import { startRun } from '../src/control/rollouts/start-run.js';
import { openSqliteStore, type SqliteStore } from '../src/control/store/sqlite/open-sqlite-store.js';
import type { HeartbeatApp } from '../src/core/heartbeat-schema.js';
import { planRollout } from '../src/core/rollout-planner.js';
import { benchArgs, median, note, printRow, series } from './lib.js';

const args = benchArgs(5, 2, ['--sizes']);
const SIZES = (args.rest.sizes ?? (args.quick ? '1000,10000' : '1000,10000,100000')).split(',').map(Number);
if (SIZES.some((n) => !(Number.isInteger(n) && n > 0))) throw new Error('--sizes takes positive integers, e.g. 1000,10000');
const T0 = Date.now();

let clockNow = T0;
const clock = { now: () => clockNow };

const app = (current: string): HeartbeatApp => ({ name: 'web', current, previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: T0 - 3_600_000 } });

// A store with `n` nodes and a run of web 2.0.0 over them in the middle of its first 10 % batch:
// the canary confirmed, the batch issued, half of it answered.
async function fleetInTheMiddleOfABatch(dir: string, n: number): Promise<{ store: SqliteStore; runId: number }> {
  clockNow = T0;
  const store = openSqliteStore(path.join(dir, `fleet-${n}.db`), { create: true, clock });
  await store.write(async (tx) => {
    await tx.settings.set('heartbeatSeconds', '30');
    await tx.releases.upsert({ app: 'web', version: '2.0.0', manifest: { payload: 'e30=', sig: 'x', keyId: '0000000000000000' }, integrity: 'sha512-x', size: 1, expires: T0 + 86_400_000 * 30, artifactPath: null, addedAt: T0, keyId: '0000000000000000' });
    for (let i = 0; i < n; i++) {
      const nodeId = `n-${String(i).padStart(12, '0')}`;
      await tx.nodes.insert({ nodeId, hostname: `host-${i}`, nodePublicKey: 'k', helperPublicKey: 'k', enrolledAt: T0, labels: { env: 'prod', rack: `r${i % 40}` } });
      await tx.nodes.recordHeartbeat({ v: 1, nodeId, seq: 1, sentAt: T0, bootId: 'b', agentVersion: '0.1.0', apps: [app('1.0.0'), { ...app('1.0.0'), name: 'cache' }], receipts: [] }, T0 - 1000);
    }
  });
  const run = await startRun(store, 'web', '2.0.0', { selector: 'env=prod', canaries: 1, batch: '10%', bakeMs: 0, seed: 1 });
  let seq = 1;
  const answer = async (share: number) =>
    store.write(async (tx) => {
      const issued = await tx.runs.issued(run.id);
      const answered = new Set((await tx.receipts.countingForRun(run.id)).map((r) => r.attemptId));
      const open = issued.filter((i) => !answered.has(i.attemptId));
      for (const i of open.slice(0, Math.ceil(open.length * share))) {
        const payload = { v: 1 as const, nodeId: i.nodeId, app: 'web', attemptId: i.attemptId, seq: ++seq, fromVersion: '1.0.0', targetVersion: '2.0.0', integrity: null, outcome: 'active' as const, startedAt: clockNow, updatedAt: clockNow };
        await tx.receipts.insert(i.nodeId, { envelope: { payload: 'e30=', sig: 'x', keyId: '0000000000000000' }, payload, counts: true }, clockNow);
      }
      await advanceRun(tx, run.id);
    });
  clockNow += 60_000;
  await answer(1); // the canary confirms: the first batch is issued
  clockNow += 60_000;
  await answer(0.5); // half the batch answers
  clockNow += 60_000;
  return { store, runId: run.id };
}

interface Figures {
  n: number;
  planMs: number[];
  advanceMs: number[];
}

async function measure(dir: string, n: number): Promise<Figures> {
  const { store, runId } = await fleetInTheMiddleOfABatch(dir, n);
  try {
    const input = await store.read(async (tx) => readPlanInput(tx, (await tx.runs.get(runId))!, clockNow));
    const planMs: number[] = [];
    const advanceMs: number[] = [];
    for (let i = 0; i < args.runs + 1; i++) {
      let t = performance.now();
      const plan = planRollout(input);
      const p = performance.now() - t;
      if (plan.status !== 'running' || plan.issue) throw new Error(`the run is not in the middle of a batch: ${plan.status}`);
      t = performance.now();
      await store.write((tx) => advanceRun(tx, runId));
      const a = performance.now() - t;
      // The first round warms the statement cache and the JIT.
      if (i > 0) (planMs.push(p), advanceMs.push(a));
    }
    return { n, planMs, advanceMs };
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-rollout-'));
  try {
    const figures: Figures[] = [];
    for (const n of SIZES) {
      note(args, `rollout-advance: ${n} nodes`);
      figures.push(await measure(dir, n));
    }
    const small = figures[0]!;
    const large = figures[figures.length - 1]!;
    for (const [what, key] of [['planner, one plan of a run mid-batch', 'planMs'], ['control plane, one advance of that run (SQLite)', 'advanceMs']] as const) {
      const perNodeUs = (f: Figures) => f[key].map((ms) => (ms * 1000) / f.n);
      const growth = median(perNodeUs(large)) / median(perNodeUs(small));
      printRow(args, {
        row: `17 ${key === 'planMs' ? 'planner' : 'advance'}`,
        what: `${what}, per node, at ${large.n} nodes`,
        unit: 'us/node',
        steward: series(perNodeUs(large)),
        target: `per node at ${large.n} within 2x of ${small.n} nodes (flat)`,
        met: growth <= 2,
        extra: Object.fromEntries([...figures.map((f) => [`ms at ${f.n}`, median(f[key])]), [`per-node growth ${small.n}->${large.n}`, growth]]),
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
