import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type TestHost } from '../helpers/host.js';
import { freePort, type AppBehavior } from '../fixtures/app-releases.js';
import { processesUnder } from '../helpers/app-processes.js';
import { appStatusOf } from '../helpers/helper-status.js';
import { updateActive } from '../helpers/update-active.js';
import { valueOf } from '../helpers/prom-text.js';
import { versionsDir } from '../../src/core/paths.js';
import { waitFor as poll } from '../helpers/systemd-container.js';

// The watch window after `active` (docs/design.md §17) with a real helper and the process runner:
// a version that passes its activation and then keeps exiting is rolled back on the host, as a
// new attempt with reason UNHEALTHY_AFTER_ACTIVATION naming the attempt it undoes; a window
// survives a SIGKILL of the helper; exits after the window, or within what it allows, roll
// nothing back.

// Respawns at +0, +200, +400 ms: three exits of a version that dies 1 s after each start come
// within about 4 s.
const fast = { restart: { baseMs: 200, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 }, stopTimeoutMs: 1000 };
const config = { apps: { web: processApp(fast) }, supervisor: { sweepMs: 500, pollMs: 100 } };

// Over the helper's socket from this process: the waits poll it (an agentctl per poll would cost
// 0.2 s of CPU each). agentctl's own output is checked once below.
const status = (host: TestHost): Promise<any> => appStatusOf(host.root, 'web');

// Polls every 100 ms (helper-status.ts pollPause: longer after a slow check), for up to `timeoutMs`.
const waitFor = <T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000) => poll(what, fn, timeoutMs, 100);

const update = updateActive;

async function receipts(host: TestHost): Promise<any[]> {
  const r = await agentctl(host, ['receipts', 'web', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (r.json.receipts as any[]).map((x) => x.payload);
}

// Waits until the textfile's text satisfies `ok`, and returns it.
async function textfileWhen(file: string, ok: (text: string) => boolean, what: string): Promise<string> {
  let text = '';
  await waitFor(what, async () => {
    text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    return text !== '' && ok(text);
  }, 20_000).catch((err) => {
    throw new Error(`${(err as Error).message}; last text:\n${text}`);
  });
  return text;
}

test('a version that keeps exiting after its activation is rolled back on the host inside its window, as a new attempt naming the one it undoes', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  const folder = path.join(host.scratch, 'node-exporter');
  const prom = path.join(folder, 'steward.prom');
  mkdirSync(folder, { mode: 0o755 });
  host.writeConfig({ ...config, metrics: { textfile: prom } });
  await host.startHelper();
  const port = await freePort();
  await update(host, '1.0.0', port, {});
  const bad = await update(host, '2.0.0', port, { crashAfterMs: 1500, watchMs: 30_000 });
  const open = await status(host);
  assert.equal(open.current, '2.0.0');
  assert.deepEqual([open.watch?.version, open.watch?.fromVersion, open.watch?.attemptId, open.watch?.maxRestarts], ['2.0.0', '1.0.0', bad.attemptId, 2]);
  const human = await agentctl(host, ['status']);
  assert.match(human.stdout, /watching 2\.0\.0 until .* \([0-2] of 2 exits allowed\)/);
  const json = await agentctl(host, ['status', 'web', '--json']);
  const seen = json.json.apps[0].watch;
  assert.deepEqual([seen?.attemptId, seen?.until, seen?.fromVersion], [open.watch.attemptId, open.watch.until, '1.0.0'], 'agentctl status --json shows the same window');
  const during = await textfileWhen(prom, (x) => valueOf(x, 'steward_app_watch_window_open', { app: 'web' }) === 1 && (valueOf(x, 'steward_app_watch_window_exits', { app: 'web', version: '2.0.0' }) ?? 0) >= 1, 'the open window with an exit in it');
  assert.equal(valueOf(during, 'steward_app_last_exit_info', { app: 'web', reason: 'EXIT', code: '3' }), 1, "2.0.0's last exit, code 3");
  assert.equal(valueOf(during, 'steward_app_watch_window_exits_allowed', { app: 'web', version: '2.0.0' }), 2);
  assert.ok((valueOf(during, 'steward_app_restarts_since_activation', { app: 'web' }) ?? 0) >= 1, 'the exits since the activation of 2.0.0');
  assert.equal(valueOf(during, 'steward_app_watch_window_end_timestamp_seconds', { app: 'web', version: '2.0.0' }), open.watch.until / 1000);

  const after = await waitFor('the rollback to 1.0.0', async () => {
    const a = await status(host);
    return a.current === '1.0.0' && a.lastAttempt?.outcome === 'rolled-back' ? a : null;
  });
  assert.notEqual(after.lastAttempt.attemptId, bad.attemptId, 'a new attempt');
  assert.equal(after.lastAttempt.reason.code, 'UNHEALTHY_AFTER_ACTIVATION');
  assert.match(after.lastAttempt.reason.message, new RegExp(`exited 3 times \\(the last with code 3\\).*activated by attempt ${bad.attemptId}`));
  assert.deepEqual(after.quarantined, ['2.0.0'], 'the failed version is quarantined');
  assert.equal(after.highestActive, '2.0.0', 'the floor against downgrades does not go down on the host\'s own judgement');
  assert.equal(after.previous, null, 'previous is what it was before 2.0.0: a rollback does not go to the version rolled back from');
  assert.equal(after.watch, null, 'the window is closed');
  assert.ok(after.lastAttempt.logFile && existsSync(after.lastAttempt.logFile), "the failed version's log is kept");
  assert.match(readFileSync(after.lastAttempt.logFile, 'utf8'), /version 2\.0\.0/);
  await textfileWhen(prom, (x) => valueOf(x, 'steward_app_watch_window_open', { app: 'web' }) === 0 && valueOf(x, 'steward_app_info', { app: 'web', version: '1.0.0' }) === 1, 'the closed window');

  const mine = (await receipts(host)).find((r) => r.attemptId === after.lastAttempt.attemptId);
  assert.deepEqual([mine?.outcome, mine?.fromVersion, mine?.targetVersion, mine?.reason?.code], ['rolled-back', '1.0.0', '2.0.0', 'UNHEALTHY_AFTER_ACTIVATION']);
  // No control plane said it takes payload v3: the cause is in the message only.
  assert.equal(mine?.v, 1);
  assert.equal(mine?.causeAttemptId, undefined);

  // One process, of 1.0.0, and it stays: the rolled-back version is not started again.
  await new Promise((r) => setTimeout(r, 1500));
  const settled = await status(host);
  assert.deepEqual([settled.current, settled.supervisor.state, settled.supervisor.version], ['1.0.0', 'running', '1.0.0']);
  assert.equal(settled.supervisor.restartsSinceActivation, 0, "the rollback is an activation: 2.0.0's exits are not 1.0.0's");
  assert.deepEqual(await processesUnder(versionsDir(host.paths, 'web')), [settled.supervisor.pid]);
});

test('the watch window survives a SIGKILL of the helper: the next helper counts the exits on and rolls back', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  const first = await host.startHelper();
  const port = await freePort();
  await update(host, '1.0.0', port, {});
  const crashFile = path.join(host.scratch, 'crash');
  writeFileSync(crashFile, '');
  const bad = await update(host, '2.0.0', port, { crashAfterMs: 1500, crashIfExists: crashFile, watchMs: 60_000, watchMaxRestarts: 1 });
  await first.kill();
  await host.startHelper();
  const w = (await status(host)).watch;
  assert.equal(w?.attemptId, bad.attemptId, 'the window is still open after the restart');
  const after = await waitFor('the rollback to 1.0.0', async () => {
    const a = await status(host);
    return a.current === '1.0.0' && a.lastAttempt?.outcome === 'rolled-back' ? a : null;
  });
  assert.equal(after.lastAttempt.reason.code, 'UNHEALTHY_AFTER_ACTIVATION');
  assert.match(after.lastAttempt.reason.message, new RegExp(`exited 2 times.*more than the 1 .*activated by attempt ${bad.attemptId}`));
  rmSync(crashFile);
});

test('exits within what the window allows, or after it closed, roll nothing back; a rollback opens none', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  await update(host, '1.0.0', port, {});
  // One exit in a window that allows two. The process checks the file 4 s after its start: the
  // test has that long (a loaded machine's pause included) to take it away once the first exit is seen.
  const crashFile = path.join(host.scratch, 'crash');
  writeFileSync(crashFile, '');
  const good = await update(host, '2.0.0', port, { crashAfterMs: 4000, crashIfExists: crashFile, watchMs: 60_000 });
  const once = await waitFor('one exit heard in the window', async () => {
    const a = await status(host);
    return a.watch?.restarts === 1 ? a : null;
  });
  rmSync(crashFile);
  assert.equal(once.watch.attemptId, good.attemptId);
  await new Promise((r) => setTimeout(r, 4500));
  const still = await status(host);
  assert.deepEqual([still.current, still.lastAttempt.attemptId, still.watch?.restarts], ['2.0.0', good.attemptId, 1]);

  // A window of 1 s: the crash loop that starts after it ends in `error`, on 3.0.0.
  const late = await update(host, '3.0.0', port, { crashAfterMs: 1500, watchMs: 1000 });
  const gaveUp = await waitFor('error', async () => {
    const a = await status(host);
    return a.supervisor?.state === 'error' ? a : null;
  });
  assert.deepEqual([gaveUp.current, gaveUp.lastAttempt.attemptId, gaveUp.watch], ['3.0.0', late.attemptId, null]);

  // watchMs 0: no window at all.
  const r = await agentctl(host, ['restart', 'web', '--json']);
  assert.equal(r.code, 0, r.stderr);
  await update(host, '4.0.0', port, { watchMs: 0 });
  assert.equal((await status(host)).watch, null);

  // An operator's rollback opens no window (it would watch 4.0.0 with 5.0.0 to go back to).
  await update(host, '5.0.0', port, {});
  assert.equal((await status(host)).watch?.version, '5.0.0', 'the default window');
  const back = await agentctl(host, ['rollback', 'web', '--json']);
  assert.equal(back.code, 0, back.stdout + back.stderr);
  const rolled = await status(host);
  assert.deepEqual([rolled.current, rolled.watch], ['4.0.0', null]);
});

test('a version whose health turns bad after its activation: rolled back by its liveness check inside its window, restarted outside one', { timeout: 60_000 }, async (t) => {
  // No sweep to lean on: the respawn after a liveness restart comes from the pass it asks for.
  const host = useHost(t, { ...config, supervisor: { sweepMs: 600_000, pollMs: 100 } });
  await host.startHelper();
  const port = await freePort();
  const liveness = { intervalMs: 200, failureThreshold: 3, timeoutMs: 500 };
  await update(host, '1.0.0', port, {});
  // /healthz answers 500 while the file exists; the process stays up.
  const sick = path.join(host.scratch, 'sick');
  const bad = await update(host, '2.0.0', port, { failIfExists: sick, liveness, watchMs: 30_000 });
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal((await status(host)).current, '2.0.0', 'healthy: nothing happens');
  writeFileSync(sick, '');
  const after = await waitFor('the rollback to 1.0.0', async () => {
    const a = await status(host);
    return a.current === '1.0.0' && a.lastAttempt?.outcome === 'rolled-back' ? a : null;
  }, 15_000);
  assert.equal(after.lastAttempt.reason.code, 'UNHEALTHY_AFTER_ACTIVATION');
  assert.match(after.lastAttempt.reason.message, new RegExp(`liveness check failed 3 times in a row \\(the last: .*500.*activated by attempt ${bad.attemptId}`));
  rmSync(sick);

  // Outside a window (watchMs 0): the failing process is restarted, spending one respawn.
  await update(host, '3.0.0', port, { failIfExists: sick, liveness, watchMs: 0 });
  const first = (await status(host)).supervisor.pid as number;
  // Only this process is sick: its respawn is healthy however late the file goes.
  writeFileSync(sick, String(first));
  const restarted = await waitFor('a respawn of 3.0.0', async () => {
    const a = await status(host);
    return a.supervisor?.pid && a.supervisor.pid !== first && a.supervisor.state === 'running' ? a : null;
  }, 15_000);
  rmSync(sick);
  assert.deepEqual([restarted.current, restarted.supervisor.version, restarted.supervisor.attempts], ['3.0.0', '3.0.0', 1]);
  // The exit is told apart from an ordinary one: the helper stopped it for its liveness.
  assert.equal(restarted.supervisor.lastExit?.reason, 'LIVENESS_FAILED');
  assert.equal(restarted.supervisor.restartsSinceActivation, 1, 'counted since the activation of 3.0.0');
  // Healthy again: no more restarts.
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal((await status(host)).supervisor.pid, restarted.supervisor.pid);
});
