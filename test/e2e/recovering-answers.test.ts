import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';
import { waitReady } from '../helpers/app-processes.js';

// docs/design.md §4: at its start the helper recovers before it takes any request that would change
// an app; those get RECOVERING meanwhile, and status answers at once.
test('while the helper recovers an interrupted activation, status answers and changes get RECOVERING', { timeout: 90_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  const port = await freePort();
  let helper = await host.startHelper();
  // 2.0.0's health fails while the gate file exists: once the gate is in place, its recovery
  // probe keeps the start busy until the test removes it (no timing window to lose on a
  // loaded machine).
  const gate = path.join(host.scratch, 'recovery-gate');
  assert.equal((await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port, { failIfExists: gate, timeoutMs: 60_000 })])).code, 0);
  writeFileSync(gate, 'x');
  await helper.stop();
  helper = await host.startHelper({ STEWARD_FAULTS: 'after-start-new' });
  const dying = await agentctl(host, ['update', 'web', '3.0.0', ...releaseArgs(host.scratch, 'web', '3.0.0', port, { stableMs: 200 })]);
  assert.equal(dying.code, 5, 'the helper died at the kill point');
  await helper.kill();

  await host.startHelper({}, { untilRecovered: false });
  const st = await agentctl(host, ['status', '--json']);
  assert.equal(st.code, 0);
  assert.equal(st.json.recovering, true, 'status answers during recovery and says so');
  const refused = await agentctl(host, ['update', 'web', '3.0.0', ...releaseArgs(host.scratch, 'web', '3.0.0', port), '--json']);
  assert.equal(refused.code, 3);
  assert.equal(refused.json.error.code, 'RECOVERING');
  const stage = await agentctl(host, ['stage', 'web', '3.0.0', ...releaseArgs(host.scratch, 'web', '3.0.0', port), '--json']);
  assert.equal(stage.json.error.code, 'RECOVERING');
  const still = await agentctl(host, ['status', '--json']);
  assert.equal(still.json.recovering, true, 'the gate holds the recovery');

  rmSync(gate);
  const ready = await waitReady(host);
  const web = ready.apps.find((a: { name: string }) => a.name === 'web');
  assert.equal(web.current, '2.0.0');
  assert.equal(web.lastAttempt.reason.code, 'ACTIVATION_INTERRUPTED');
});
