import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, sri, type HelperProcess } from '../helpers/host.js';
import { allReceipts, appStatus, waitIdle } from '../helpers/app-processes.js';
import { appRelease, fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
let helper: HelperProcess;
let port: number;

before(async () => {
  port = await freePort();
  helper = await host.startHelper();
  const r = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
});

// A release whose activation lasts until the test removes `gate`: its health fails while the
// file exists (no timing window that a loaded machine could miss). Written to scratch.
function gatedRelease(version: string, gate: string): { file: string; integrity: string } {
  writeFileSync(gate, 'x');
  const tgz = appRelease('web', version, port, { failIfExists: gate, timeoutMs: 60_000 });
  const file = path.join(host.scratch, `web-${version}-slow.tgz`);
  writeFileSync(file, tgz);
  return { file, integrity: sri(tgz) };
}

// Sends an update over admin.sock and hangs up as soon as the request is written: the reply is lost.
function sendAndHangUp(version: string, attemptId: string, rel: { file: string; integrity: string }): Promise<void> {
  const request = { v: 1, id: 1, op: 'update', app: 'web', version, path: rel.file, integrity: rel.integrity, allowUnsigned: true, attemptId };
  return new Promise((resolve, reject) => {
    const s = net.createConnection(host.paths.adminSock);
    s.once('error', reject);
    s.once('connect', () => {
      s.write(JSON.stringify(request) + '\n', () => {
        s.destroy();
        resolve();
      });
    });
  });
}

async function waitRunning(attemptId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const web = await appStatus(host, 'web');
    if (web.running?.attemptId === attemptId) return;
    assert.ok(Date.now() < deadline, `attempt ${attemptId} never showed as running: ${JSON.stringify(web)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const updateArgs = (version: string, rel: { file: string; integrity: string }, attemptId: string) =>
  ['update', 'web', version, '--file', rel.file, '--integrity', rel.integrity, '--allow-unsigned', '--attempt-id', attemptId, '--json'];

test('a retried request with the same attemptId after a lost reply gets the settled receipt; no second attempt runs', { timeout: 60_000 }, async () => {
  const X = 'lost-reply-1';
  const gate = path.join(host.scratch, 'gate-2.0.0');
  const rel = gatedRelease('2.0.0', gate);
  await sendAndHangUp('2.0.0', X, rel);
  await waitRunning(X);
  rmSync(gate);
  await waitIdle(host);
  const web = await appStatus(host, 'web');
  assert.equal(web.lastAttempt.attemptId, X, 'the attempt ran to its end although its client went away');
  assert.equal(web.lastAttempt.outcome, 'active');
  assert.equal(await fetchVersion(port), '2.0.0');
  const journalBefore = web.lastAttempt;

  const retry = await agentctl(host, updateArgs('2.0.0', rel, X));
  assert.equal(retry.code, 0, retry.stderr + retry.stdout);
  assert.equal(retry.json.settled, true);
  assert.equal(retry.json.attemptId, X);
  assert.equal(retry.json.outcome, 'active');
  const { code, receipts } = await allReceipts(host, 'web');
  assert.equal(code, 0);
  const forX = receipts.filter((r) => r.payload.attemptId === X);
  assert.equal(forX.length, 1, 'exactly one receipt for the attempt');
  assert.deepEqual(retry.json.receipt, forX[0].envelope, 'the answer is the settled receipt');
  assert.deepEqual((await appStatus(host, 'web')).lastAttempt, journalBefore, 'no second attempt ran');
});

test('a second request with the same attemptId while it runs attaches, and another attemptId gets BUSY with a refused receipt', { timeout: 60_000 }, async () => {
  const X = 'attach-1';
  const Y = 'other-1';
  const gate = path.join(host.scratch, 'gate-3.0.0');
  const rel = gatedRelease('3.0.0', gate);
  await sendAndHangUp('3.0.0', X, rel);
  await waitRunning(X);
  const attaching = agentctl(host, updateArgs('3.0.0', rel, X));
  const busy = await agentctl(host, updateArgs('3.0.0', rel, Y));
  // The attempt ends only once the second request has attached to it (the helper says so).
  const attachedLine = `request over admin.sock attached to running attempt=${X}`;
  const deadline = Date.now() + 20_000;
  while (!helper.stderr().includes(attachedLine)) {
    assert.ok(Date.now() < deadline, `the helper never logged: ${attachedLine}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  rmSync(gate);
  const attached = await attaching;

  assert.equal(attached.code, 0, attached.stderr + attached.stdout);
  assert.equal(attached.json.attemptId, X);
  assert.equal(attached.json.outcome, 'active');
  assert.notEqual(attached.json.settled, true, 'it attached to the running attempt');
  assert.ok(attached.json.receipt?.payload);

  assert.equal(busy.code, 3, busy.stderr + busy.stdout);
  assert.equal(busy.json.error.code, 'BUSY');
  assert.match(busy.json.error.message, new RegExp(X));

  await waitIdle(host);
  const { code, receipts } = await allReceipts(host, 'web');
  assert.equal(code, 0);
  const forX = receipts.filter((r) => r.payload.attemptId === X);
  assert.equal(forX.length, 1);
  assert.deepEqual(forX[0].envelope, attached.json.receipt);
  const forY = receipts.filter((r) => r.payload.attemptId === Y);
  assert.equal(forY.length, 1, 'the refusal of a request with an attemptId has a receipt');
  assert.equal(forY[0].payload.outcome, 'refused');
  assert.equal(forY[0].payload.reason.code, 'BUSY');
  assert.equal(await fetchVersion(port), '3.0.0');
});
