import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

function decodeReceipt(envelope: { payload: string }): any {
  return JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
}

test("a probe that fails for both old and new versions does not raise the new version's failure count", { timeout: 60_000 }, async (t) => {
  const port = await freePort();
  const h = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  await h.startHelper();
  const sick = path.join(h.scratch, 'environment-is-sick');
  const quarantineOf = (v: string) => JSON.parse(readFileSync(path.join(h.paths.stateDir, 'web.json'), 'utf8')).quarantine[v];

  const v1 = await agentctl(h, ['update', 'web', '1.0.0', ...releaseArgs(h.scratch, 'web', '1.0.0', port, { failIfExists: sick, timeoutMs: 2000 }), '--json']);
  assert.equal(v1.code, 0, v1.stderr + v1.stdout);

  // The environment goes bad: 1.0.0's health fails from now on, and 2.0.0's always does.
  writeFileSync(sick, 'x');
  const v2args = releaseArgs(h.scratch, 'web', '2.0.0', port, { health: 'fail', timeoutMs: 2000 });
  const before = Date.now();
  const both = await agentctl(h, ['update', 'web', '2.0.0', ...v2args, '--json']);
  assert.equal(both.code, 1, both.stderr + both.stdout);
  assert.equal(both.json.outcome, 'failed');
  assert.equal(both.json.reason.code, 'ROLLBACK_UNHEALTHY');
  assert.ok(typeof both.json.retryAfter === 'number' && both.json.retryAfter > before, 'a retryAfter is set');
  const receipt = decodeReceipt(both.json.receipt);
  assert.equal(receipt.outcome, 'failed');
  assert.equal(receipt.rollbackHealthy, false);
  assert.equal(receipt.retryAfter, both.json.retryAfter);
  assert.equal(quarantineOf('2.0.0')?.failures, 0, 'the failure count is not raised');
  assert.equal(quarantineOf('2.0.0')?.retryAfter, both.json.retryAfter);

  // The environment heals; the same version now fails on its own: the blame is its.
  rmSync(sick);
  const blamed = await agentctl(h, ['update', 'web', '2.0.0', ...v2args, '--force', '--json']);
  assert.equal(blamed.code, 4, blamed.stderr + blamed.stdout);
  assert.equal(blamed.json.outcome, 'rolled-back');
  assert.equal(decodeReceipt(blamed.json.receipt).rollbackHealthy, true);
  assert.equal(quarantineOf('2.0.0')?.failures, 1, 'a normal rolled-back attempt raises it to 1');
  assert.equal(await fetchVersion(port), '1.0.0');
});
