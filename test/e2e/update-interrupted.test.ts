// Ctrl-C during `agentctl update` (issue 31 item 9): the helper goes on with the attempt (a client
// that leaves never cancels one), and agentctl says so, with how to follow it and that the app is
// held, then exits 130. A real agentctl child sent SIGINT while the helper probes the new version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, BIN, processApp, type TestHost } from '../helpers/host.js';
import { appStatusOf } from '../helpers/helper-status.js';
import { waitFor } from '../helpers/systemd-container.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

// Polled over the socket, in this process: an agentctl per poll cost the window below on a loaded machine.
const web = (host: TestHost) => appStatusOf(host.root, 'web');

test('Ctrl-C during agentctl update says the update goes on in the helper, how to follow it and that the app is held; the update ends active', { timeout: 90_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  await host.startHelper();
  const port = await freePort();
  assert.equal((await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { stableMs: 200 })])).code, 0);
  assert.equal((await agentctl(host, ['release-hold', 'web'])).code, 0);

  // 2.0.0 stays in its probe for 4 s: long enough to be interrupted there.
  const child = spawn(process.execPath, [BIN.agentctl, '--root', host.root, 'update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port, { stableMs: 4000 })], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  // Past staging, an update over admin.sock holds the app; the attempt is running.
  const running = await waitFor('the update to be past staging', async () => {
    const a = await web(host);
    return a.running?.op === 'update' && a.hold ? a : null;
  });
  child.kill('SIGINT');
  const end = await exited;
  t.diagnostic(stderr.trim());
  assert.deepEqual(end, { code: 130, signal: null }, stderr);
  assert.equal(stdout, '', 'nothing on stdout: the command has no result');
  assert.match(stderr, /interrupted, but the update of web to 2\.0\.0 goes on in steward-helper/);
  assert.ok(stderr.includes(`attempt ${running.running.attemptId}`), stderr);
  assert.ok(stderr.includes(`agentctl --root ${host.root} status web`), stderr);
  assert.ok(stderr.includes(`agentctl --root ${host.root} receipts web`), stderr);
  assert.match(stderr, /web is held \(by .*\): the control plane changes it no more until `agentctl --root \S+ release-hold web`/);

  // What it said is true: the helper took the attempt to its end, and web stays held.
  const after = await waitFor('the update to end', async () => {
    const a = await web(host);
    return a.running === null ? a : null;
  });
  assert.equal(after.current, '2.0.0');
  assert.equal(after.lastAttempt.outcome, 'active');
  assert.equal(after.lastAttempt.attemptId, running.running.attemptId);
  assert.ok(after.hold, 'the hold stays');
  assert.equal(await fetchVersion(port), '2.0.0');
  const receipts = await agentctl(host, ['receipts', 'web', '--json']);
  const all = (receipts.json?.receipts ?? receipts.json) as any[];
  assert.ok(all.some((r: any) => (r.payload ?? r).attemptId === running.running.attemptId && (r.payload ?? r).outcome === 'active'), receipts.stdout);
});
