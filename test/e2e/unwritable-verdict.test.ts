import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type HelperProcess } from '../helpers/host.js';
import { allReceipts, appStatus, waitReady } from '../helpers/app-processes.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
let helper: HelperProcess;
let port: number;

before(async () => {
  port = await freePort();
  helper = await host.startHelper();
  const r = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
});

async function restartHelper(env: Record<string, string> = {}): Promise<void> {
  await helper.stop();
  helper = await host.startHelper(env);
  await waitReady(host);
}

const journal = () => JSON.parse(readFileSync(path.join(host.paths.journalDir, 'web.json'), 'utf8'));

test('a healthy update whose verdict cannot be written continues as a failed probe and rolls back', { timeout: 60_000 }, async () => {
  await restartHelper({ STEWARD_FAULTS: 'enospc:verdict' });
  const r = await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port), '--json']);
  assert.equal(r.code, 4, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'rolled-back');
  assert.match(r.json.reason.message, /verdict could not be written/);
  assert.ok(r.json.receipt?.payload);
  assert.match(helper.stderr(), /steward-fault-enospc verdict/);
  assert.equal(await fetchVersion(port), '1.0.0');
  const web = await appStatus(host, 'web');
  assert.equal(web.current, '1.0.0');
  assert.equal(web.blocked, null);
  assert.equal(journal().outcome, 'rolled-back');
});

test('when the rollback verdict cannot be written either, the app is blocked, the journal says activating, and the next start recovers it with one receipt', { timeout: 60_000 }, async () => {
  await restartHelper({ STEWARD_FAULTS: 'enospc:verdict,enospc:rollback-verdict' });
  const attemptId = 'disk-full-1';
  const r = await agentctl(host, ['update', 'web', '3.0.0', ...releaseArgs(host.scratch, 'web', '3.0.0', port), '--attempt-id', attemptId, '--json']);
  // Exit 1, not 3: the journal was written, so this is no refusal with nothing changed.
  assert.equal(r.code, 1, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'IO_ERROR');
  assert.match(r.json.error.message, /disk full/);
  assert.match(helper.stderr(), /steward-fault-enospc rollback-verdict/);
  const blocked = await appStatus(host, 'web');
  assert.equal(blocked.blocked?.reason, 'DISK_FULL', 'the app is blocked');
  assert.equal(journal().outcome, 'activating', 'the journal still says activating');
  assert.equal(journal().attemptId, attemptId);
  const refused = await agentctl(host, ['update', 'web', '3.0.0', ...releaseArgs(host.scratch, 'web', '3.0.0', port), '--json']);
  assert.equal(refused.code, 3);
  assert.equal(refused.json.error.code, 'BLOCKED');

  await restartHelper();
  const web = await appStatus(host, 'web');
  assert.equal(web.blocked, null, 'recovery clears the block');
  assert.equal(web.current, '1.0.0');
  assert.equal(web.lastAttempt.attemptId, attemptId);
  assert.equal(web.lastAttempt.outcome, 'rolled-back');
  assert.equal(web.lastAttempt.reason.code, 'ACTIVATION_INTERRUPTED');
  assert.equal(await fetchVersion(port), '1.0.0');
  const { code, receipts } = await allReceipts(host, 'web');
  assert.equal(code, 0);
  const mine = receipts.filter((x) => x.payload.attemptId === attemptId);
  assert.equal(mine.length, 1, 'exactly one receipt for the attempt');
  assert.equal(mine[0].payload.outcome, 'rolled-back');
  assert.equal(mine[0].payload.reason.code, 'ACTIVATION_INTERRUPTED');
});
