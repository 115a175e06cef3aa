// metadata-stale (docs/design.md §21.2): a node whose heartbeat (v8) says it trusts by TUF with a
// newest timestamp over 2 h old, or none, while the fleet has a repository, is behind for that
// reason in `target status`, flagged in `nodes`, and counted by steward_nodes_metadata_stale; a
// fresh one, a `keys` one, an older agent and any node of a fleet without a repository are not.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { localActor } from '../../src/control/audit/record-audit.js';
import { createControlMetrics } from '../../src/control/metrics/control-metrics.js';
import { runOperation } from '../../src/control/operations/operation.js';
import { nodesList } from '../../src/control/operations/node-ops.js';
import { targetSet, targetStatus } from '../../src/control/operations/target-ops.js';
import { isMetadataStale } from '../../src/control/trust/freshness.js';
import { enrollNodes, FakeClock, startControlInProcess, type Control, type FakeNode } from '../helpers/control-harness.js';
import { seedRepository } from '../helpers/trust-admin.js';

let c: Control;
let nodes: FakeNode[];
const ctx = () => ({ store: c.store, actor: localActor(), artifactsDir: `${c.dir}/artifacts` });

before(async () => {
  c = await startControlInProcess({ clock: new FakeClock(Date.now()) });
  nodes = await enrollNodes(c, 4);
  await c.addRelease('web', '1.1.0');
  await runOperation(ctx(), targetSet, { name: 'all', app: 'web', version: '1.1.0', canaries: '0', batch: '100%', bake: '0' });
});
after(() => c.close());

const reports = [
  { scheme: 'tuf', rootVersion: 1, timestampVersion: 2, timestampAgeSeconds: 2 * 3600 + 1 },
  { scheme: 'tuf', rootVersion: 1 },
  { scheme: 'tuf', rootVersion: 1, timestampVersion: 2, timestampAgeSeconds: 60 },
  { scheme: 'keys' },
];

const staleGauge = async () => {
  const text = await createControlMetrics({ store: c.store, cacheMs: 0, processMetrics: false }).registry.metrics();
  return Number(/^steward_nodes_metadata_stale (\d+)$/m.exec(text)?.[1]);
};
const reasons = async () => {
  const t = (await runOperation(ctx(), targetStatus, { name: 'all' })) as { nodes: Array<{ nodeId: string; reason: { reason: string } | null }> };
  return nodes.map((n) => t.nodes.find((x) => x.nodeId === n.nodeId)?.reason?.reason ?? null);
};
const flags = async () => {
  const l = await runOperation(ctx(), nodesList, {});
  return nodes.map((n) => l.nodes.find((x) => x.nodeId === n.nodeId)?.metadataStale);
};

test('without a repository no node is metadata-stale, whatever it reports', async () => {
  for (const [i, n] of nodes.entries()) assert.equal((await n.heartbeat({ v: 8, trust: reports[i] })).status, 200);
  assert.equal(await staleGauge(), 0);
  assert.deepEqual(await flags(), [false, false, false, false]);
  assert.ok(!(await reasons()).includes('metadata-stale'));
});

test('with a repository: over 2 h old and no timestamp are stale; a fresh one and a keys host are not', async () => {
  await seedRepository(c.store, c.clock.now());
  assert.equal(await staleGauge(), 2);
  assert.deepEqual(await flags(), [true, true, false, false]);
  const r = await reasons();
  assert.deepEqual([r[0], r[1]], ['metadata-stale', 'metadata-stale']);
  assert.notEqual(r[2], 'metadata-stale');
  assert.notEqual(r[3], 'metadata-stale');
  // The stale one fetches a bundle and reports a fresh timestamp: no longer stale.
  assert.equal((await nodes[0]!.heartbeat({ v: 8, trust: reports[2] })).status, 200);
  assert.equal(await staleGauge(), 1);
  // An older agent (no trust report) is not counted.
  assert.equal((await nodes[1]!.heartbeat()).status, 200);
  assert.equal(await staleGauge(), 0);
});

test('the rule: exactly two hours is not stale, a second more is', () => {
  const at = (s: number | undefined) => ({ trust: { scheme: 'tuf' as const, ...(s === undefined ? {} : { timestampAgeSeconds: s }), at: 0 } });
  assert.equal(isMetadataStale(at(7200), true), false);
  assert.equal(isMetadataStale(at(7201), true), true);
  assert.equal(isMetadataStale(at(undefined), true), true);
  assert.equal(isMetadataStale(at(undefined), false), false);
  assert.equal(isMetadataStale({ trust: null }, true), false);
});

// The text `nodes` table's TRUST column (docs/control-plane.md, `nodes`): the cell of each node's
// first row, read under its header.
const trustColumn = (text: string): Map<string, string> => {
  const lines = text.trimEnd().split('\n');
  const header = lines[0] ?? '';
  const from = header.indexOf('TRUST');
  const to = header.indexOf('APP', from);
  assert.ok(from > 0 && to > from, header);
  const out = new Map<string, string>();
  for (const l of lines.slice(1)) {
    const id = l.slice(0, l.indexOf(' '));
    if (id) out.set(id, l.slice(from, to).trim());
  }
  return out;
};

test('the text nodes table shows each node trust: scheme, root version, stale; - for an older agent', async () => {
  const { formatNodes } = await import('../../src/control/cli/commands/nodes.js');
  assert.equal((await nodes[0]!.heartbeat({ v: 8, trust: { scheme: 'tuf', rootVersion: 3, timestampVersion: 9, timestampAgeSeconds: 3 * 3600 } })).status, 200);
  assert.equal((await nodes[1]!.heartbeat()).status, 200);
  assert.equal((await nodes[2]!.heartbeat({ v: 8, trust: { scheme: 'tuf', rootVersion: 3, timestampVersion: 9, timestampAgeSeconds: 60 } })).status, 200);
  assert.equal((await nodes[3]!.heartbeat({ v: 8, trust: { scheme: 'keys' } })).status, 200);
  const col = trustColumn(formatNodes((await runOperation(ctx(), nodesList, {})).nodes));
  assert.deepEqual(nodes.map((n) => col.get(n.nodeId)), ['tuf r3 stale', '-', 'tuf r3', 'keys']);
});

test('the TRUST cell is built from a known scheme and a whole version only: hostile or unknown values never reach the terminal', async () => {
  const { trustCell } = await import('../../src/control/cli/commands/nodes.js');
  const cell = (trust: unknown, metadataStale: unknown = false) => trustCell({ trust, metadataStale } as never);
  assert.equal(cell(null), '-');
  assert.equal(cell(undefined), '-', 'a server older than trust reports');
  assert.equal(cell({ scheme: 'tuf' }, true), 'tuf stale', 'a tuf host with no root version reported');
  assert.equal(cell({ scheme: '\u001b[2J\u001b[Htuf\nn-evil', rootVersion: 3 }), '?');
  assert.equal(cell({ scheme: 'tuf', rootVersion: '3\u001b[2J' }), 'tuf');
  assert.equal(cell({ scheme: 'tuf', rootVersion: 1.5 }), 'tuf');
  assert.equal(cell({ scheme: 'tuf', rootVersion: -1 }), 'tuf');
  assert.equal(cell({ scheme: 'keys', rootVersion: 4 }), 'keys');
  assert.equal(cell({ scheme: 'tuf', rootVersion: 2 }, 'yes'), 'tuf r2', 'stale only when the flag is true');
});
