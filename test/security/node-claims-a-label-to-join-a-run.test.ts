// A node cannot move itself into a run (docs/design.md §11): what it proposes at enrollment is kept
// under claimed.<key>, and a selector on `env` never reads `claimed.env`. Here a node enrolled
// with a token labelled env=staging claims env=prod; a rollout to env=prod never asks it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENROLL_PATH } from '../../src/core/control-api.js';
import { describeRun } from '../../src/control/rollouts/run-status.js';
import { dryRunStart, startRun } from '../../src/control/rollouts/start-run.js';
import { FakeNode, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control | null = null;
after(() => c?.close());

test('a node that claims env=prod at enrollment with a token labelled env=staging is never targeted by --select env=prod', async () => {
  c = await startControlInProcess();
  const ctl = c;
  const prod = await new FakeNode(ctl, 'prod').enroll(await ctl.token(3_600_000, { env: 'prod' }));
  const claimer = new FakeNode(ctl, 'claimer');
  const enrolled = await post(ctl.server.url, ENROLL_PATH, claimer.enrollBody(await ctl.token(3_600_000, { env: 'staging' }), { labels: { env: 'prod' } }));
  assert.equal(enrolled.status, 200);
  claimer.nodeId = enrolled.body.nodeId;
  for (const n of [prod, claimer]) {
    n.setCurrent('web', '1.0.0');
    await n.heartbeat();
  }
  await ctl.addRelease('web', '1.1.0');
  const dry = await dryRunStart(ctl.store, 'web', '1.1.0', { selector: 'env=prod', bakeMs: 0 });
  assert.deepEqual(Object.keys(dry.simulation.first.nodes), [prod.nodeId], 'not in the dry run');
  // Only an operator's selector that names the claimed key reads it.
  const claimed = await dryRunStart(ctl.store, 'web', '1.1.0', { selector: 'claimed.env=prod', bakeMs: 0 });
  assert.deepEqual(Object.keys(claimed.simulation.first.nodes), [claimer.nodeId]);
  // Naming it as a canary does not bring it in either.
  await assert.rejects(startRun(ctl.store, 'web', '1.1.0', { selector: 'env=prod', canary: [claimer.nodeId] }), /not a node this run would ask: not selected/);
  await startRun(ctl.store, 'web', '1.1.0', { selector: 'env=prod', bakeMs: 0 });
  const v = await ctl.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));
  assert.deepEqual(v.nodes.map((n) => n.nodeId), [prod.nodeId], 'not in the run');
  assert.deepEqual((await claimer.heartbeat()).body.desired, [], 'never asked');
});
