// A run's analysis and its steps' judgements in the store (docs/design.md §19), on both backends: the
// policy stored per run and per target (beside the target's strict policy JSON), the first
// judgement of a step kept, a resume answering only inconclusive ones, and what the database holds
// checked when read (a hostile analysis turns the run's off, a hostile judgement is inconclusive).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ANALYSIS_OFF, DEFAULT_RUN_ANALYSIS, type RunAnalysis } from '../../src/core/run-analysis.js';
import { openStore } from '../../src/control/store/open-store.js';
import { MIGRATIONS } from '../../src/control/store/sqlite/schema.js';
import type { StoredJudgement } from '../../src/control/store/judgement-record.js';
import type { ControlStore, NewRun, TargetRow } from '../../src/control/store/store.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { pgQuery } from '../helpers/postgres.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-run-analysis-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const ENFORCE: RunAnalysis = { mode: 'enforce', windowMs: 5 * 60_000, thresholds: { errorRatio: 0.01 } };
const run = (over: Partial<NewRun> = {}): NewRun => ({
  app: 'web', version: '1.1.0', startedAt: T0, heartbeatIntervalMs: 30_000, selector: '', canaries: 1, namedCanaries: [], canarySeed: 1, batch: '1', bakeMs: 0,
  maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', failuresCarried: 0, verdictTimeoutMs: 3_600_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null,
  analysis: ENFORCE, ...over,
});
const target: TargetRow = {
  name: 'prod', app: 'web', version: '1.1.0', priority: 0, paused: false, setAt: T0, setBy: 'alice', clearedRunId: 0,
  policy: { selector: 'env=prod', canaries: 1, namedCanaries: [], batch: '10%', bakeMs: 0, maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', verdictTimeoutMs: 1_800_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, analysis: ENFORCE },
};
const judgement = (verdict: StoredJudgement['verdict']): StoredJudgement => ({
  verdict, from: new Date(T0).toISOString(), to: new Date(T0 + 300_000).toISOString(), summary: `${verdict}: restart-rate: canary 4.00/h vs baseline 0.10/h`,
  signals: [{ signal: 'restart-rate', verdict, canary: { nodes: 3, value: 4, sample: 900 }, baseline: { nodes: 20, value: 0.1, sample: 6000 }, why: 'canaries worse' }],
});

describeEachBackend((backend) => {
  let store: ControlStore;
  let url = '';
  before(async () => {
    url = await backend.createDatabase();
    store = await openStore(url, { clock: new FakeClock() });
  });
  after(() => store.close());

  test('a run keeps its analysis; a target keeps its own, out of the policy JSON that older instances read strictly', async () => {
    const id = await store.write((tx) => tx.runs.insert(run(), []));
    assert.deepEqual((await store.read((tx) => tx.runs.get(id)))?.analysis, ENFORCE);
    await store.write((tx) => tx.targets.put(target));
    assert.deepEqual((await store.read((tx) => tx.targets.get('prod')))?.policy.analysis, ENFORCE);
    const raw = backend.name === 'sqlite' ? new Database(url, { readonly: true }).prepare('SELECT policy FROM targets').get() as { policy: string } : (await pgQuery(url, 'SELECT policy FROM targets')).rows[0];
    assert.equal('analysis' in JSON.parse(raw.policy), false);
    await store.write((tx) => tx.runs.end(id, 'stopped', undefined, T0));
  });

  test('the first judgement of a step stays; a resume answers only the inconclusive ones not answered yet', async () => {
    const id = await store.write((tx) => tx.runs.insert(run(), []));
    const row = (step: number, verdict: StoredJudgement['verdict']) => ({ runId: id, step, at: T0 + step, mode: 'enforce' as const, verdict, from: T0, to: T0 + 300_000, judgement: judgement(verdict) });
    assert.equal(await store.write((tx) => tx.runs.insertJudgement(row(0, 'pass'))), true);
    assert.equal(await store.write((tx) => tx.runs.insertJudgement(row(0, 'fail'))), false, 'another instance judged step 0 first');
    assert.equal(await store.write((tx) => tx.runs.insertJudgement(row(1, 'inconclusive'))), true);
    assert.equal(await store.write((tx) => tx.runs.resumeJudgements(id, T0 + 5, 'alice')), 1);
    assert.equal(await store.write((tx) => tx.runs.resumeJudgements(id, T0 + 6, 'bob')), 0);
    const rows = await store.read((tx) => tx.runs.judgements(id));
    assert.deepEqual(rows.map((r) => [r.step, r.verdict, r.resumedBy, r.resumedAt]), [[0, 'pass', null, null], [1, 'inconclusive', 'alice', T0 + 5]]);
    assert.deepEqual(rows[0]!.judgement, judgement('pass'));
    await store.write((tx) => tx.runs.end(id, 'stopped', undefined, T0));
  });

  test('what the database holds is checked: a hostile analysis reads off, a hostile judgement reads inconclusive and says so', async () => {
    const id = await store.write((tx) => tx.runs.insert(run(), []));
    const hostileAnalysis = JSON.stringify({ mode: 'enforce', windowMs: -1, thresholds: {} });
    const hostileJudgement = JSON.stringify({ verdict: 'pass', from: 'x', to: 'y', summary: 'x'.repeat(10_000), signals: [] });
    if (backend.name === 'sqlite') {
      const db = new Database(url);
      db.prepare('UPDATE runs SET analysis = ? WHERE id = ?').run(hostileAnalysis, id);
      db.prepare(`INSERT INTO run_judgements (runId, step, at, mode, verdict, windowFrom, windowTo, judgement) VALUES (?, 0, ?, 'enforce', 'passed!', ?, ?, ?)`).run(id, T0, T0, T0, hostileJudgement);
      db.close();
    } else {
      await pgQuery(url, 'UPDATE runs SET analysis = $1 WHERE id = $2', [hostileAnalysis, id]);
      await pgQuery(url, `INSERT INTO run_judgements ("runId", step, at, mode, verdict, "windowFrom", "windowTo", judgement) VALUES ($1, 0, $2, 'enforce', 'passed!', $2, $2, $3)`, [id, T0, hostileJudgement]);
    }
    assert.deepEqual((await store.read((tx) => tx.runs.get(id)))?.analysis, ANALYSIS_OFF);
    const [j] = await store.read((tx) => tx.runs.judgements(id));
    assert.equal(j?.verdict, 'inconclusive');
    assert.equal(j?.judgement.verdict, 'inconclusive');
    assert.match(j!.judgement.summary, /not one steward-control wrote/);
    await store.write((tx) => tx.runs.end(id, 'stopped', undefined, T0));
  });
});

test('a SQLite store of schema 8 is upgraded: its runs read analysis off, its targets the default (observe)', async () => {
  const file = path.join(dir, 'old.db');
  const raw = new Database(file);
  for (const m of MIGRATIONS.slice(0, 8)) m(raw);
  raw.pragma('user_version = 8');
  raw.prepare(`INSERT INTO runs (app, version, startedAt, batchSize, verdictTimeoutMs, allowRetryReverted, heartbeatIntervalMs, status) VALUES ('web', '1.0.0', ?, 1, 60000, 0, 30000, 'succeeded')`).run(T0);
  const { analysis: _a, ...policy } = target.policy;
  raw.prepare(`INSERT INTO targets (name, app, version, priority, policy, setAt) VALUES ('prod', 'web', '1.1.0', 0, ?, ?)`).run(JSON.stringify(policy), T0);
  raw.close();
  const store = await openStore(file);
  try {
    assert.deepEqual((await store.read((tx) => tx.runs.latest('web')))?.analysis, ANALYSIS_OFF);
    assert.deepEqual((await store.read((tx) => tx.targets.get('prod')))?.policy.analysis, DEFAULT_RUN_ANALYSIS);
  } finally {
    await store.close();
  }
});
