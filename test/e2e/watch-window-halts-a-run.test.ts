import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentctl, processApp } from '../helpers/host.js';
import { useHost } from '../helpers/host-fixture.js';
import { helperStatus } from '../helpers/helper-status.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { controlNodes, controlRuns } from '../helpers/control-read.js';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';
import { appRelease, fetchVersion, freePort } from '../fixtures/app-releases.js';

// The watch window in a run (docs/design.md §17), with the real steward-control, agent and helper:
// the run's bake goes to the node as its window; a canary that passes its activation and then
// keeps exiting is rolled back on the host, its receipt (payload v3) names the run's attempt as
// its cause, and the run halts at the canary with the reason; so does one whose health turns bad.

test('a canary that keeps exiting, or whose health turns bad, after its activation is rolled back within the bake sent as its window, and the run halts with UNHEALTHY_AFTER_ACTIVATION', { timeout: 180_000 }, async (t) => {
  const port = await freePort();
  const h = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000, restart: { baseMs: 200, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 } }) }, supervisor: { sweepMs: 500, pollMs: 100 } });
  const db = path.join(h.scratch, 'control.db');
  const ctl = async (...args: string[]) => {
    const r = await controlCli(db, [...args, '--json']);
    assert.equal(r.code, 0, `steward-control ${args.join(' ')}: ${r.stdout}${r.stderr}`);
    return r.json;
  };
  const control = await startControlDaemon(db, 0, 1);
  h.stopFirst(() => control.stop());
  const url = control.url;
  const keys = await ctl('keys', 'create', '--out', path.join(h.scratch, 'keys'));
  mkdirSync(path.join(h.paths.trustedKeysDir, 'web'), { recursive: true });
  copyFileSync(keys.publicKeyFile, path.join(h.paths.trustedKeysDir, 'web', 'release.pub'));
  await h.startHelper();

  const { token } = await ctl('token', 'create');
  const enrolled = await agentctl(h, ['enroll', '--control-plane', url, '--token', token, '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);
  const nodeId = enrolled.json.nodeId as string;
  const a = startAgentProcess(h);
  // 2.0.0 passes its activation (200 ms stable) and exits 1 s after each start. Its manifest says
  // nothing of a window: the run's bake is the window.
  // Four exits allowed, 2 s apart or more: the window stays open some 12 s, for a heartbeat (every
  // second) to show it to a poll of the store. The waits read it in this process (control-read.ts);
  // the run asserted on is what the CLI prints.
  const behaviors = { '1.0.0': { stableMs: 100 }, '2.0.0': { stableMs: 200, crashAfterMs: 2000, watchMaxRestarts: 4 } } as const;
  for (const [v, b] of Object.entries(behaviors)) {
    const file = path.join(h.scratch, `web-${v}.tgz`);
    writeFileSync(file, appRelease('web', v, port, b));
    await ctl('release', 'add', 'web', v, '--file', file, '--base-url', url, '--key', keys.privateKeyFile);
  }
  await a.waitFor('the first heartbeat', async () => Boolean((await controlNodes(db))[0]?.lastHeartbeatAt));
  await ctl('rollout', 'start', 'web', '1.0.0', '--bake', '0');
  await a.waitFor('the rollout of 1.0.0 to end', async () => (await controlRuns(db, 'web'))[0]?.status === 'succeeded', 60_000);
  assert.equal(await fetchVersion(port), '1.0.0');

  await ctl('rollout', 'start', 'web', '2.0.0', '--canary', nodeId, '--bake', '60s');
  // While it runs, the node's heartbeats (v4) show the open window with the run's bake as its length.
  let watched: any = null;
  await a.waitFor('a heartbeat with the open window', async () => {
    const app: any = (await controlNodes(db))[0]?.apps?.find((x) => x.name === 'web');
    watched = app?.watch?.version === '2.0.0' ? app.watch : null;
    return watched !== null;
  }, 30_000);
  assert.equal(watched.maxRestarts, 4);
  assert.ok(watched.until > Date.now() + 30_000 && watched.until <= Date.now() + 60_000, `the window is the run's bake (60 s): ends at ${new Date(watched.until).toISOString()}`);
  await a.waitFor('the run of 2.0.0 to halt', async () => {
    const [r] = await controlRuns(db, 'web');
    return r?.version === '2.0.0' && r.status !== 'running';
  }, 60_000);
  const ended = (await ctl('rollout', 'status', 'web')).runs[0];
  assert.equal(ended.status, 'halted', JSON.stringify(ended));
  assert.equal(ended.haltReason?.code, 'UNHEALTHY_AFTER_ACTIVATION', JSON.stringify(ended.haltReason));
  assert.equal(ended.haltReason?.nodeId, nodeId);
  assert.equal(ended.nodes[0].state, 'reverted');

  // The host: back on 1.0.0, 2.0.0 quarantined; the rollback's receipt names the run's attempt.
  const st = (await helperStatus(h.root)).apps.find((x: any) => x.name === 'web');
  assert.deepEqual([st.current, st.lastAttempt.reason.code, st.quarantined], ['1.0.0', 'UNHEALTHY_AFTER_ACTIVATION', ['2.0.0']]);
  assert.equal(await fetchVersion(port), '1.0.0');
  const runAttempt = ended.nodes[0].attemptId as string;
  const receipts = (await agentctl(h, ['receipts', 'web', '--json'])).json.receipts.map((x: any) => x.payload);
  const activated = receipts.find((r: any) => r.attemptId === runAttempt);
  const undone = receipts.find((r: any) => r.attemptId === st.lastAttempt.attemptId);
  assert.equal(activated?.outcome, 'active', 'the run attempt itself was active');
  assert.deepEqual([undone?.v, undone?.outcome, undone?.causeAttemptId], [3, 'rolled-back', runAttempt], JSON.stringify(undone));
  // And the control plane stored it.
  await a.waitFor('the control plane to store the rollback receipt', async () => (await ctl('receipts')).receipts.some((r: any) => r.attemptId === st.lastAttempt.attemptId), 20_000);

  // The same run for a canary whose health turns bad after its activation (the process stays up):
  // its liveness check fails inside the window, the host rolls it back, and the run halts.
  const sick = path.join(h.scratch, 'sick');
  const f3 = path.join(h.scratch, 'web-3.0.0.tgz');
  writeFileSync(f3, appRelease('web', '3.0.0', port, { stableMs: 200, failIfExists: sick, liveness: { intervalMs: 200, failureThreshold: 3, timeoutMs: 500 } }));
  await ctl('release', 'add', 'web', '3.0.0', '--file', f3, '--base-url', url, '--key', keys.privateKeyFile);
  await ctl('rollout', 'start', 'web', '3.0.0', '--canary', nodeId, '--bake', '60s');
  // Healthy through its activation (the activation's probe is the startup probe, apart from liveness).
  await a.waitFor('3.0.0 active on the host', async () => {
    const w = (await helperStatus(h.root)).apps.find((x: any) => x.name === 'web');
    return w?.current === '3.0.0' && w.lastAttempt?.outcome === 'active';
  }, 60_000);
  writeFileSync(sick, '');
  let sickEnded: any = null;
  await a.waitFor('the run of 3.0.0 to halt', async () => {
    const r = (await ctl('rollout', 'status', 'web')).runs[0];
    sickEnded = r.version === '3.0.0' && r.status !== 'running' ? r : null;
    return sickEnded !== null;
  }, 60_000);
  assert.equal(sickEnded.status, 'halted', JSON.stringify(sickEnded));
  assert.equal(sickEnded.haltReason?.code, 'UNHEALTHY_AFTER_ACTIVATION', JSON.stringify(sickEnded.haltReason));
  const back = (await helperStatus(h.root)).apps.find((x: any) => x.name === 'web');
  assert.equal(back.current, '1.0.0');
  assert.match(back.lastAttempt.reason.message, /liveness check failed 3 times in a row/);
  assert.equal(await fetchVersion(port), '1.0.0');
});
