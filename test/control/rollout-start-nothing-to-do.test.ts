// A rollout start that would ask nobody is refused NOT_FOUND (docs/control-plane.md), naming why
// each selected node was left out and its hostname, never a run that "succeeds" with nobody
// confirmed; its dry run says the same. Seen on a real fleet when the only target had reverted
// that version before.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { dryRunStart, retryRun, startRun } from '../../src/control/rollouts/start-run.js';
import { FakeNode, MINUTE, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

// A control plane with one node per hostname, each reporting web 1.0.0 (db 3.0.0 for `noWeb`), web 1.1.0 in the catalog.
async function fleet(hostnames: string[], noWeb: string[] = []): Promise<{ c: Control; nodes: Map<string, FakeNode> }> {
  c = await startControlInProcess();
  const nodes = new Map<string, FakeNode>();
  for (const h of hostnames) {
    const n = await new FakeNode(c, h).enroll();
    n.setCurrent(noWeb.includes(h) ? 'db' : 'web', noWeb.includes(h) ? '3.0.0' : '1.0.0');
    assert.equal((await n.heartbeat()).status, 200);
    nodes.set(h, n);
  }
  await c.addRelease('web', '1.1.0');
  return { c, nodes };
}

const runsOf = (ctl: Control) => ctl.store.read(async (tx) => (await tx.runs.latest('web'))?.id ?? null);

test('a start whose only target rolled that version back before is refused NOT_FOUND naming it, its hostname and REVERTED_BEFORE, and its dry run agrees', async () => {
  const { c, nodes } = await fleet(['web-only']);
  const n = nodes.get('web-only')!;
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0 });
  await n.answer('rolled-back', 'REPLACEMENT_UNHEALTHY');
  // Its quarantine ended long ago: the node would take the version; the run does not ask it.
  c.clock.advance(60 * MINUTE);
  assert.equal((await n.heartbeat()).status, 200);
  const before = await runsOf(c);
  const expected = new RegExp(`^nothing to do for web 1\\.1\\.0: none of the 1 selected node would be asked: 1 node rolled back or failed web 1\\.1\\.0 before \\(REVERTED_BEFORE; --allow-retry-reverted asks again\\): ${n.nodeId} \\(web-only\\)$`);
  await assert.rejects(startRun(c.store, 'web', '1.1.0', { bakeMs: 0 }), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'NOT_FOUND');
    assert.match(err.message, expected);
    return true;
  });
  assert.equal(await runsOf(c), before, 'no run was recorded');
  await assert.rejects(dryRunStart(c.store, 'web', '1.1.0', { bakeMs: 0 }), { code: 'NOT_FOUND', message: expected });
  // A retry of that run says the same, with its own code.
  await assert.rejects(retryRun(c.store, 'web', { bakeMs: 0 }), {
    code: 'NOTHING_TO_RETRY',
    message: new RegExp(`^rollout 1 left 1 node, and nothing to do for web 1\\.1\\.0: .*REVERTED_BEFORE.*: ${n.nodeId} \\(web-only\\)$`),
  });
  // Allowed to retry it, the node is asked.
  const run = await startRun(c.store, 'web', '1.1.0', { bakeMs: 0, allowRetryReverted: true });
  assert.equal(run.status, 'running');
  assert.equal((await n.heartbeat()).body.desired.length, 1);
});

test('a start over nodes that all run the version already is refused, not a run that succeeds with nobody confirmed', async () => {
  const { c, nodes } = await fleet(['a-1', 'a-2']);
  for (const n of nodes.values()) {
    n.setCurrent('web', '1.1.0');
    await n.heartbeat();
  }
  // By nodeId order (the ids are random): either hostname first.
  const ids = [...nodes.values()].map((n) => `${n.nodeId} \\(${n.hostname}\\)`);
  const both = `(${ids[0]}, ${ids[1]}|${ids[1]}, ${ids[0]})`;
  await assert.rejects(startRun(c.store, 'web', '1.1.0', {}), { code: 'NOT_FOUND', message: new RegExp(`none of the 2 selected nodes would be asked: 2 nodes already run 1\\.1\\.0 \\(REPORTED\\): ${both}$`) });
  await assert.rejects(dryRunStart(c.store, 'web', '1.1.0', {}), { code: 'NOT_FOUND', message: /2 nodes already run 1\.1\.0/ });
  assert.equal(await runsOf(c), null);
});

test('the refusal names every reason a node was left out: reverted before, already current, stale, without the app', async () => {
  const { c, nodes } = await fleet(['reverted', 'current', 'stale', 'no-web'], ['no-web']);
  await startRun(c.store, 'web', '1.1.0', { selector: '', canary: [nodes.get('reverted')!.nodeId], bakeMs: 0 });
  await nodes.get('reverted')!.answer('failed', 'REPLACEMENT_UNHEALTHY');
  c.clock.advance(10 * MINUTE);
  nodes.get('current')!.setCurrent('web', '1.1.0');
  for (const h of ['reverted', 'current', 'no-web']) await nodes.get(h)!.heartbeat();
  const err = await startRun(c.store, 'web', '1.1.0', {}).catch((e: Error & { code?: string }) => e);
  assert.ok(err instanceof Error && (err as { code?: string }).code === 'NOT_FOUND', String(err));
  const id = (h: string) => nodes.get(h)!.nodeId;
  assert.equal(
    err.message,
    `nothing to do for web 1.1.0: none of the 4 selected nodes would be asked: 1 node rolled back or failed web 1.1.0 before (REVERTED_BEFORE; --allow-retry-reverted asks again): ${id('reverted')} (reverted); ` +
      `1 node already runs 1.1.0 (REPORTED): ${id('current')} (current); 1 node sent no heartbeat in the last 3 intervals (NO_RECENT_HEARTBEAT): ${id('stale')} (stale); ` +
      `1 node does not run web (APP_NOT_ON_NODE): ${id('no-web')} (no-web)`,
  );
});

test('one node that would be asked is enough: the run starts, the others shown as left out', async () => {
  const { c, nodes } = await fleet(['current', 'asked']);
  nodes.get('current')!.setCurrent('web', '1.1.0');
  await nodes.get('current')!.heartbeat();
  const run = await startRun(c.store, 'web', '1.1.0', { bakeMs: 0 });
  assert.equal(run.status, 'running');
  assert.equal((await nodes.get('asked')!.heartbeat()).body.desired.length, 1);
});
