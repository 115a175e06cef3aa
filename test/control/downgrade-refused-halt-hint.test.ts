// A run halted by a DOWNGRADE_REFUSED refusal names the command that authorizes going back
// (docs/control-plane.md, going back): one `--key` of a release key of the app in a fleet on keys,
// and under TUF (the fleet's repository delegates the app, docs/trust.md) one `--key` per key up to
// the delegation's threshold, as `release allow-downgrade` then requires.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { localActor } from '../../src/control/audit/record-audit.js';
import { runOperation } from '../../src/control/operations/operation.js';
import { rolloutStart, rolloutStatus } from '../../src/control/operations/rollout-ops.js';
import { enrollNodes, FakeClock, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { seedRepository } from '../helpers/trust-admin.js';

let c: Control | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

// Two nodes that ran web 1.1.0 are asked for 1.0.0 and refuse it DOWNGRADE_REFUSED; the halt's message.
async function haltMessage(tuf: boolean): Promise<{ code: string; message: string }> {
  c = await startControlInProcess({ clock: new FakeClock(Date.now()) });
  const ctl = c;
  const nodes = await enrollNodes(ctl, 2);
  for (const v of ['1.0.0', '1.1.0']) await ctl.addRelease('web', v);
  if (tuf) await seedRepository(ctl.store, ctl.clock.now(), ['1.0.0', '1.1.0']);
  for (const n of nodes) {
    n.setCurrent('web', '1.1.0');
    assert.equal((await n.heartbeat()).status, 200);
  }
  const ctx = { store: ctl.store, actor: localActor(), artifactsDir: `${ctl.dir}/artifacts` };
  await runOperation(ctx, rolloutStart, { app: 'web', version: '1.0.0', canaries: '0', batch: '100%', bake: '0', maxRefused: '0' });
  for (const n of nodes) await n.answer('refused', 'DOWNGRADE_REFUSED');
  await ctl.server.tick();
  const run = (await runOperation(ctx, rolloutStatus, { app: 'web' })).runs[0] as { status: string; haltReason: { code: string; message: string } | null };
  assert.equal(run.status, 'halted', JSON.stringify(run));
  assert.ok(run.haltReason);
  return run.haltReason;
}

test('a fleet on keys: the halt names one release key of the app', async () => {
  const h = await haltMessage(false);
  assert.equal(h.code, 'TOO_MANY_REFUSED');
  assert.match(h.message, /DOWNGRADE_REFUSED\), over --max-refused 0; the hosts ran a newer version: to go back, `steward-control release allow-downgrade web 1\.0\.0 --key <a release key of web>`, then start the rollout again$/);
});

test("a fleet on TUF: the halt names a threshold of the app.web delegation's keys (2 of them)", async () => {
  const h = await haltMessage(true);
  assert.equal(h.code, 'TOO_MANY_REFUSED');
  assert.match(h.message, /to go back, `steward-control release allow-downgrade web 1\.0\.0 --key <K1> --key <K2>` \(2 of the app\.web delegation's keys\), then start the rollout again$/);
  assert.doesNotMatch(h.message, /a release key of web/);
});
