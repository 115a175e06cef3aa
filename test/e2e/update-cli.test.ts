import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { appStatus } from '../helpers/app-processes.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

const QUARANTINE_BASE_MS = 300_000;

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
let port: number;

before(async () => {
  port = await freePort();
  await host.startHelper();
});

const update = (version: string, behavior = {}, extra: string[] = []) =>
  agentctl(host, ['update', 'web', version, ...releaseArgs(host.scratch, 'web', version, port, behavior), ...extra, '--json']);

function quarantineOf(version: string): { failures: number; retryAfter: number } | undefined {
  const state = JSON.parse(readFileSync(path.join(host.paths.stateDir, 'web.json'), 'utf8'));
  return state.quarantine[version];
}

test('agentctl update --allow-unsigned activates a release, answers with a receipt and exits 0', { timeout: 60_000 }, async () => {
  const r = await update('1.0.0');
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'active');
  assert.equal(r.json.fromVersion, null);
  assert.equal(r.json.targetVersion, '1.0.0');
  assert.ok(r.json.receipt?.payload, 'the answer carries the signed receipt');
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('agentctl status --json shows the new current', { timeout: 60_000 }, async () => {
  const web = await appStatus(host, 'web');
  assert.equal(web.current, '1.0.0');
  assert.equal(web.currentState, 'valid');
  assert.equal(web.lastAttempt.outcome, 'active');
  assert.equal(web.running, null);
});

test('a release whose probe fails exits 4 and the old version still answers on its port', { timeout: 60_000 }, async () => {
  const r = await update('2.0.0', { health: 'fail', timeoutMs: 2000 });
  assert.equal(r.code, 4, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'rolled-back');
  assert.equal(r.json.reason.code, 'REPLACEMENT_UNHEALTHY');
  assert.ok(r.json.receipt?.payload);
  assert.equal(await fetchVersion(port), '1.0.0');
  assert.equal(quarantineOf('2.0.0')?.failures, 1);
});

test("the failed version's last log lines are kept in the file the answer names", { timeout: 60_000 }, async () => {
  const web = await appStatus(host, 'web');
  const logFile: string = web.lastAttempt.logFile;
  assert.ok(logFile, 'the journal names a log file');
  assert.equal(path.dirname(logFile), host.paths.logDir);
  assert.equal(path.basename(logFile), `web-${web.lastAttempt.attemptId}.log`);
  const text = readFileSync(logFile, 'utf8');
  assert.match(text, /version 2\.0\.0/, "the failed version's output is kept");
  assert.doesNotMatch(text, /version 1\.0\.0/, "the old version's output is not mixed in");
});

test('trying the quarantined version again is refused with QUARANTINED and exits 3', { timeout: 60_000 }, async () => {
  const r = await update('2.0.0', { health: 'fail', timeoutMs: 2000 });
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'QUARANTINED');
  assert.equal(quarantineOf('2.0.0')?.failures, 1, 'a refusal changes nothing');
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('--force tries a quarantined version anyway and a second failure doubles its quarantine', { timeout: 60_000 }, async () => {
  const before = Date.now();
  const r = await update('2.0.0', { health: 'fail', timeoutMs: 2000 }, ['--force']);
  const afterCall = Date.now();
  assert.equal(r.code, 4, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'rolled-back');
  const q = quarantineOf('2.0.0');
  assert.equal(q?.failures, 2);
  assert.equal(r.json.retryAfter, q?.retryAfter);
  assert.ok((q?.retryAfter ?? 0) >= before + 2 * QUARANTINE_BASE_MS, `retryAfter ${q?.retryAfter} is at least 10 min away`);
  assert.ok((q?.retryAfter ?? 0) <= afterCall + 2 * QUARANTINE_BASE_MS);
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('updating to the current version exits 0 with reason ALREADY_ACTIVE and a receipt', { timeout: 60_000 }, async () => {
  const r = await update('1.0.0');
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'active');
  assert.equal(r.json.reason.code, 'ALREADY_ACTIVE');
  assert.ok(r.json.receipt?.payload);
  const receipts = await agentctl(host, ['receipts', 'web', '--json']);
  assert.equal(receipts.code, 0);
  const mine = receipts.json.receipts.filter((x: any) => x.payload.attemptId === r.json.attemptId);
  assert.equal(mine.length, 1);
  assert.equal(mine[0].payload.reason.code, 'ALREADY_ACTIVE');
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('--no-wait exits 0 printing the attemptId, and status later shows the outcome', { timeout: 60_000 }, async () => {
  const r = await agentctl(host, ['update', 'web', '3.0.0', ...releaseArgs(host.scratch, 'web', '3.0.0', port), '--no-wait']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const attemptId = r.stdout.trim();
  assert.match(attemptId, /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/);
  const deadline = Date.now() + 20_000;
  let web: any;
  for (;;) {
    web = await appStatus(host, 'web');
    if (web.lastAttempt?.attemptId === attemptId && web.lastAttempt.outcome !== 'activating' && web.running === null) break;
    assert.ok(Date.now() < deadline, `attempt ${attemptId} did not end: ${JSON.stringify(web)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(web.lastAttempt.outcome, 'active');
  assert.equal(web.current, '3.0.0');
  assert.equal(web.previous, '1.0.0');
  assert.equal(await fetchVersion(port), '3.0.0');
});
