import { after, describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, promises as fsp, readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isTerminal } from '../../src/core/journal-schema.js';
import { appDir, currentLink, stagingDir, versionDir, versionsDir } from '../../src/core/paths.js';
import { FAULT_POINTS, type FaultPoint } from '../../src/platform/faults.js';
import { readMarker } from '../../src/helper/release-store.js';
import { readJournal } from '../../src/helper/update/journal.js';
import { readRunRecord } from '../../src/helper/runners/run-record.js';
import { callHelper } from '../../src/protocol/client.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, REPO, type TestHost } from '../helpers/host.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';
import { processesUnder } from '../helpers/app-processes.js';
import { RequestLoops } from '../../bench/lib/request-loops.js';

// The crash test: for each kill point, a helper with STEWARD_FAULTS=<point> is
// SIGKILLed there in the middle of `update web 3.0.0`; a fresh helper then starts, and the
// host must hold one complete release, a terminal journal, one receipt for the attempt and
// one running process of the app.

// Points reached before the verdict is durable: recovery rolls back to 2.0.0.
const BEFORE_VERDICT: ReadonlySet<FaultPoint> = new Set([
  'after-journal-activating',
  'after-verdict-state',
  'after-stop-old',
  'after-symlink-before-rename',
  'after-rename-before-fsync',
  'after-start-new',
  'during-probe',
  'after-handover-start',
  'after-handover-ready',
  'after-handover-drain',
]);

// The points of the handover of an app with sockets (docs/design.md §17): reached only by such an
// app, whose test also keeps 8 request loops going through the kill and the recovery, and
// requires that none of their requests failed (the keeper holds the socket throughout).
const HANDOVER: ReadonlySet<FaultPoint> = new Set(['after-handover-start', 'after-handover-ready', 'after-handover-drain']);

const reached = new Map<FaultPoint, boolean>();

after(() => {
  const lines = FAULT_POINTS.map((p) => `  ${p}: ${reached.get(p) === true ? 'reached' : reached.get(p) === false ? 'NOT reached' : 'not run'}`);
  console.log(`kill points summary (${[...reached.values()].filter(Boolean).length}/${FAULT_POINTS.length} reached):\n${lines.join('\n')}`);
});

// Waits until the helper's start is over: status answers with recovering=false.
async function waitRecovered(host: TestHost): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    // Straight to admin.sock: an agentctl process per poll costs CPU the helpers need.
    const s = (await callHelper(host.paths.adminSock, { v: 1, id: 1, op: 'status' }).catch((err: Error) => err)) as { recovering?: boolean } | Error;
    if (!(s instanceof Error) && s.recovering === false) return;
    if (Date.now() > deadline) throw new Error(`the helper still recovers after 20 s: ${s instanceof Error ? s.message : JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function update(host: TestHost, version: string, port: number, extra: string[], health: 'ok' | 'fail' = 'ok', sockets = false) {
  const behavior = { health, stableMs: 200, timeoutMs: 3000, ...(sockets ? { ready: 'after' as const, readyAfterMs: 50, watchMs: 0 } : {}) };
  return agentctl(host, ['update', 'web', version, ...releaseArgs(host.scratch, 'web', version, port, behavior), ...extra, '--json']);
}

// What a point must end in once the next helper has recovered.
// Points reached while the new release is staged (docs/design.md §20: its files filed as objects
// and its tree linked), before the update's journal: nothing was activated and the attempt never
// began (no journal of it, no receipt: the control plane's verdict timeout decides it, as for a
// helper that died in any stage); 2.0.0 stays current, and what the next start keeps is complete.
const STAGING: ReadonlySet<FaultPoint> = new Set(['during-objects', 'after-objects-before-rename']);

function expectedOutcome(point: FaultPoint): { outcome: string; reason: string | null; current: string } {
  if (STAGING.has(point)) return { outcome: 'none', reason: null, current: '2.0.0' };
  if (BEFORE_VERDICT.has(point) || point === 'during-swap-back') return { outcome: 'rolled-back', reason: 'ACTIVATION_INTERRUPTED', current: '2.0.0' };
  return { outcome: 'active', reason: null, current: '3.0.0' };
}

// Each point has its own host and port, so three run at once to keep the file well under three minutes.
describe('a helper SIGKILLed at a kill point and restarted', { concurrency: 3 }, () => {
  // STEWARD_TEST_KILL_POINTS=a,b runs only those points (to look at one by hand).
  const only = process.env.STEWARD_TEST_KILL_POINTS?.split(',');
  for (const point of FAULT_POINTS.filter((p) => !only || only.includes(p))) {
    it(`leaves one valid release, a terminal journal, one receipt and one running app after ${point}`, async (t) => {
      const port = await freePort();
      const sockets = HANDOVER.has(point);
      const host = useHost(t, { apps: { web: processApp({ keepReleases: 2, stopTimeoutMs: 2000, ...(sockets ? { sockets: [{ name: 'http', listen: `127.0.0.1:${port}` }] } : {}) }) } });

      // 1. Two healthy releases, so there is a previous and something to prune.
      const first = await host.startHelper();
      for (const v of ['1.0.0', '2.0.0']) {
        const r = await update(host, v, port, [], 'ok', sockets);
        assert.equal(r.code, 0, `install ${v}: ${r.stdout} ${r.stderr}`);
        assert.equal(r.json.outcome, 'active', r.stdout);
      }
      assert.equal(await first.stop(), 0);

      // 2. A helper with the seam armed at `point` dies there during `update web 3.0.0`.
      const attemptId = `kp-${point}`;
      const loops = sockets ? new RequestLoops(`http://127.0.0.1:${port}/`, 8, 10) : null;
      loops?.start();
      if (loops) host.stopFirst(() => loops.stop());
      const loadFrom = performance.now();
      const faulty = await host.startHelper({ STEWARD_FAULTS: point });
      const upd = await update(host, '3.0.0', port, ['--attempt-id', attemptId], point === 'during-swap-back' ? 'fail' : 'ok', sockets);
      if (faulty.child.exitCode === null && faulty.child.signalCode === null) {
        await Promise.race([once(faulty.child, 'exit'), new Promise((r) => setTimeout(r, 10_000))]);
      }
      const wasReached = new RegExp(`^steward-fault-reached ${point} 1$`, 'm').test(faulty.stderr());
      reached.set(point, wasReached);
      console.log(`kill point ${point}: ${wasReached ? 'reached' : 'NOT reached'}`);
      assert.ok(wasReached, `kill point ${point} was NOT reached; helper stderr:\n${faulty.stderr()}`);
      assert.equal(faulty.child.signalCode, 'SIGKILL', `the helper should have died by SIGKILL at ${point}; exit ${faulty.child.exitCode}`);
      assert.notEqual(upd.code, 0, `agentctl update should fail when the helper dies: ${upd.stdout}`);

      // 3. A helper without faults recovers.
      const recovered = await host.startHelper();
      await waitRecovered(host);
      if (loops) {
        // The app answers again, then: not one request failed through the kill and the recovery.
        await fetchVersion(port);
        await loops.stop();
        const w = loops.figures(loadFrom, performance.now());
        console.log(`kill point ${point}: ${w.answered} requests answered, ${w.failed} failed, longest gap ${Math.round(w.longestGapMs)} ms`);
        assert.equal(w.failed, 0, `requests failed through the kill at ${point}: ${JSON.stringify(w.why)}`);
      }

      const want = expectedOutcome(point);
      const target = await fsp.readlink(currentLink(host.paths, 'web'));
      assert.equal(target, `versions/${want.current}`, `current after ${point}`);
      assert.ok(await readMarker(host.paths, 'web', want.current), `versions/${want.current} has a valid marker`);
      assert.ok(existsSync(path.join(versionDir(host.paths, 'web', want.current), 'steward-release.json')), 'the tree holds steward-release.json');

      const j = await readJournal(host.paths, 'web');
      assert.equal(j.state, 'ok', JSON.stringify(j));
      if (j.state !== 'ok') return;
      if (STAGING.has(point)) {
        assert.notEqual(j.journal.attemptId, attemptId, 'the attempt never began');
        assert.ok(isTerminal(j.journal.outcome), `journal outcome ${j.journal.outcome} is terminal`);
        const rc = await agentctl(host, ['receipts', 'web', '--json']);
        assert.equal(rc.code, 0, `every receipt verifies: ${rc.stdout} ${rc.stderr}`);
        assert.deepEqual((rc.json.receipts as { payload: { attemptId: string } }[]).filter((r) => r.payload.attemptId === attemptId), [], 'no receipt of an attempt that never began');
        assert.deepEqual(readdirSync(stagingDir(host.paths, 'web')), [], 'no .staging/* is left');
        // Only complete objects and complete trees are left: verify finds nothing changed.
        const v = await agentctl(host, ['verify', 'web', '--json']);
        assert.equal(v.code, 0, `verify after ${point}: ${v.stdout} ${v.stderr}`);
        assert.equal(await fetchVersion(port), '2.0.0', 'the app answers with the version current points to');
        assert.equal((await processesUnder(versionsDir(host.paths, 'web'))).length, 1, 'exactly one process of the app runs');
        // The agent's retry of the attempt stages again, from the objects the crash left, and ends.
        const retry = await update(host, '3.0.0', port, ['--attempt-id', attemptId], 'ok', sockets);
        assert.equal(retry.json?.outcome, 'active', `${retry.stdout} ${retry.stderr}`);
        assert.equal(await fsp.readlink(currentLink(host.paths, 'web')), 'versions/3.0.0');
        console.log(`kill point ${point}: passed (never began; the retry active, current 3.0.0)`);
        return;
      }
      assert.equal(j.journal.attemptId, attemptId);
      assert.ok(isTerminal(j.journal.outcome), `journal outcome ${j.journal.outcome} is terminal`);
      assert.equal(j.journal.outcome, want.outcome, JSON.stringify(j.journal));
      assert.equal(j.journal.reason?.code ?? null, want.reason, JSON.stringify(j.journal));

      // A version that never reached active is not the highest active one, and previous is as before.
      const state = JSON.parse(await fsp.readFile(path.join(host.paths.stateDir, 'web.json'), 'utf8'));
      assert.equal(state.highestActive, want.current, `highestActive after ${point}`);
      assert.equal(state.previous, want.current === '3.0.0' ? '2.0.0' : '1.0.0', `previous after ${point}`);

      const rc = await agentctl(host, ['receipts', 'web', '--json']);
      assert.equal(rc.code, 0, `every receipt verifies: ${rc.stdout} ${rc.stderr}`);
      const receipts = rc.json.receipts as { verified: boolean; payload: Record<string, any> }[];
      assert.ok(receipts.every((r) => r.verified), 'every receipt verifies');
      const ours = receipts.filter((r) => r.payload.attemptId === attemptId);
      assert.equal(ours.length, 1, `exactly one receipt for ${attemptId}; all: ${JSON.stringify(receipts.map((r) => [r.payload.seq, r.payload.attemptId, r.payload.outcome]))}; helper:\n${recovered.stderr().slice(-4000)}`);
      assert.equal(ours[0]!.payload.outcome, want.outcome);
      assert.equal(ours[0]!.payload.reason?.code ?? null, want.reason);
      const seqs = receipts.map((r) => r.payload.seq as number);
      assert.equal(new Set(seqs).size, seqs.length, `receipt seqs are unique: ${seqs}`);

      assert.deepEqual(readdirSync(stagingDir(host.paths, 'web')), [], 'no .staging/* is left');
      for (const v of readdirSync(versionsDir(host.paths, 'web'))) {
        assert.ok(await readMarker(host.paths, 'web', v), `versions/${v} has a valid marker`);
      }
      assert.deepEqual(readdirSync(appDir(host.paths, 'web')).filter((n) => n.startsWith('.current.')), [], 'no stray temp link');

      assert.equal(await fetchVersion(port), want.current, 'the app answers with the version current points to');
      const pids = await processesUnder(versionsDir(host.paths, 'web'));
      assert.equal(pids.length, 1, `exactly one process of the app runs: ${pids}`);
      const rec = await readRunRecord(host.paths, 'web');
      assert.equal(rec?.expected, 'running');
      assert.equal(rec?.version, want.current);
      assert.equal(rec?.process?.pid, pids[0], 'the run record names the running process');

      // The client's retry of the same attempt is answered from its receipt; nothing runs again.
      const retry = await update(host, '3.0.0', port, ['--attempt-id', attemptId], point === 'during-swap-back' ? 'fail' : 'ok', sockets);
      assert.equal(retry.json?.attemptId, attemptId, `${retry.stdout} ${retry.stderr}`);
      assert.equal(retry.json?.outcome, want.outcome, retry.stdout);
      assert.equal(await fsp.readlink(currentLink(host.paths, 'web')), target, 'the retry changed nothing');
      const again = await agentctl(host, ['receipts', 'web', '--json']);
      assert.equal(again.json.receipts.filter((r: { payload: { attemptId?: string } }) => r.payload.attemptId === attemptId).length, 1, 'still one receipt');
      assert.equal(again.json.receipts.length, receipts.length, 'the retry wrote no receipt');

      console.log(`kill point ${point}: passed (${j.journal.outcome}${want.reason ? ' ' + want.reason : ''}, current ${want.current})`);
    });
  }
});

test('a power cut in the middle of a handover (the helper, the app and its socket keeper all gone) recovers to one process of the version current resolves to', { timeout: 120_000 }, async (t) => {
  const port = await freePort();
  const host = useHost(t, { apps: { web: processApp({ keepReleases: 2, stopTimeoutMs: 2000, sockets: [{ name: 'http', listen: `127.0.0.1:${port}` }] }) } });
  const first = await host.startHelper();
  for (const v of ['1.0.0', '2.0.0']) assert.equal((await update(host, v, port, [], 'ok', true)).json?.outcome, 'active');
  assert.equal(await first.stop(), 0);
  const faulty = await host.startHelper({ STEWARD_FAULTS: 'after-handover-ready' });
  await update(host, '3.0.0', port, [], 'ok', true);
  if (faulty.child.exitCode === null && faulty.child.signalCode === null) await Promise.race([once(faulty.child, 'exit'), new Promise((r) => setTimeout(r, 10_000))]);
  assert.match(faulty.stderr(), /^steward-fault-reached after-handover-ready 1$/m);
  // The power goes: both versions' processes and the keeper that holds the socket die with it.
  const both = await processesUnder(versionsDir(host.paths, 'web'));
  assert.equal(both.length, 2, `old and new run side by side at after-handover-ready: ${both}`);
  const keeper = JSON.parse(await fsp.readFile(path.join(host.paths.runDir, 'keepers', 'web.pid'), 'utf8')).pid as number;
  for (const pid of [...both, keeper]) process.kill(pid, 'SIGKILL');
  await host.startHelper();
  await waitRecovered(host);
  assert.equal(await fsp.readlink(currentLink(host.paths, 'web')), 'versions/2.0.0');
  const j = await readJournal(host.paths, 'web');
  assert.equal(j.state === 'ok' && j.journal.outcome, 'rolled-back');
  assert.equal(j.state === 'ok' && j.journal.handover, undefined, 'a terminal journal names no handover');
  assert.equal(await fetchVersion(port), '2.0.0', 'a new keeper bound the socket and 2.0.0 serves on it');
  const pids = await processesUnder(versionsDir(host.paths, 'web'));
  assert.equal(pids.length, 1, `exactly one process of the app runs: ${pids}`);
});

test('every kill point was reached', () => {
  const only = process.env.STEWARD_TEST_KILL_POINTS?.split(',');
  const missing = FAULT_POINTS.filter((p) => (!only || only.includes(p)) && reached.get(p) !== true);
  assert.deepEqual(missing, [], `kill points never reached: ${missing.join(', ')}`);
});

test('the fault seam is inert with an empty root prefix or without STEWARD_FAULTS', () => {
  const faults = JSON.stringify(pathToFileURL(path.join(REPO, 'dist/src/platform/faults.js')).href);
  const inert = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { faultsFromEnv } = await import(${faults});
       faultsFromEnv({ STEWARD_FAULTS: 'after-stop-old' }, '').hit('after-stop-old');
       faultsFromEnv({}, '/x').hit('after-stop-old');`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(inert.status, 0, `the inert seams return: signal ${inert.signal}, stderr ${inert.stderr}`);
  assert.equal(inert.stderr, '', 'an inert seam prints nothing');

  // The control: the same call with a root prefix does kill, so the check above can fail.
  const armed = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `const { faultsFromEnv } = await import(${faults}); faultsFromEnv({ STEWARD_FAULTS: 'after-stop-old' }, '/x').hit('after-stop-old');`],
    { encoding: 'utf8' },
  );
  assert.equal(armed.signal, 'SIGKILL', `status ${armed.status}, stderr ${armed.stderr}`);
  assert.match(armed.stderr, /^steward-fault-reached after-stop-old 1$/m);
});
