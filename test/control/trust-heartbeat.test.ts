// The heartbeat answer and the fleet's TUF repository (docs/design.md §21.2, §16): `trust` and each
// desired entry's `directive` only to an agent that names them in steward-desired-fields (an older
// agent's answer stays strict); the directive opens under the root's director key for this node,
// app, version and attempt, and holds at most until the entry's notAfter; a held heartbeat's
// digest ignores the directive; the node's v8 trust report is stored. On both backends.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ANALYSIS_OFF } from '../../src/core/run-analysis.js';
import { DESIRED_FIELDS_HEADER, HEARTBEAT_PATH, heartbeatAnswerSchema } from '../../src/core/control-api.js';
import type { NewRun } from '../../src/control/store/store.js';
import { desiredDigest } from '../../src/control/wakeups/hold-heartbeat.js';
import { directorKeysOf, openDirective } from '../../src/platform/trust/directive.js';
import { adminCall } from '../helpers/admin-client.js';
import { enrollNodes, FakeClock, startControlOn, type Control, type FakeNode } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { seedRepository, type SeededRepository } from '../helpers/trust-admin.js';

const run = (version: string, startedAt: number): NewRun => ({
  app: 'web', version, startedAt, heartbeatIntervalMs: 30_000, selector: '', canaries: 1, namedCanaries: [], canarySeed: 1, batch: '1', bakeMs: 0,
  maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', failuresCarried: 0, verdictTimeoutMs: 3_600_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null, analysis: ANALYSIS_OFF,
});

describeEachBackend((backend) => {
  let c: Control<ControlStore>;
  let node: FakeNode;
  let repo: SeededRepository;
  const HOUR = 3_600_000;


  before(async () => {
    c = await startControlOn(backend, { clock: new FakeClock(Date.now()) });
    [node] = (await enrollNodes(c, 1)) as [FakeNode];
    repo = await seedRepository(c.store, c.clock.now());
    await c.addRelease('web', '1.1.0');
    const now = c.clock.now();
    await c.store.write(async (tx) => {
      const id = await tx.runs.insert(run('1.1.0', now), [{ nodeId: node.nodeId, lastHeartbeatAt: now, listedApp: true }]);
      await tx.runs.insertIssued(id, { nodeId: node.nodeId, attemptId: `r${id}.${node.nodeId}`, issuedAt: now, notAfter: now + 2 * HOUR, batch: 0 });
    });
  });
  after(() => c.close());

  const beat = (fields: string | null, over: Record<string, unknown> = {}) =>
    adminCall(c.server.url, HEARTBEAT_PATH, { method: 'POST', raw: Buffer.from(node.body(over)), headers: { 'content-type': 'application/json', ...(fields === null ? {} : { [DESIRED_FIELDS_HEADER]: fields }) } });

  test('an agent that names neither gets neither: its answer stays strict', async () => {
    const a = await beat(null);
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(a.body.desired.length, 1);
    assert.equal('trust' in a.body, false);
    assert.equal('directive' in a.body.desired[0], false);
    const b = await beat('indexedManifest, fetchUntil');
    assert.equal('trust' in b.body, false);
    assert.equal('directive' in b.body.desired[0], false);
  });

  test('an agent that names trust gets the newest root and timestamp versions, and only that', async () => {
    const a = await beat('trust');
    assert.deepEqual(a.body.trust, { rootVersion: 1, timestampVersion: 2 });
    assert.equal('directive' in a.body.desired[0], false);
    assert.ok(heartbeatAnswerSchema.safeParse(a.body).success, 'the answer is one the contract accepts');
  });

  test("an agent that names directive gets one per entry that opens under the root's director key, for this node, app, version and attempt", async () => {
    const a = await beat('directive, trust');
    assert.ok(heartbeatAnswerSchema.safeParse(a.body).success);
    const entry = a.body.desired[0];
    const keys = directorKeysOf(repo.root);
    const opened = openDirective(entry.directive, keys, { nodeId: node.nodeId, app: 'web', version: '1.1.0', now: c.clock.now() });
    assert.ok(opened.ok, JSON.stringify(opened));
    assert.deepEqual(opened.directive, { nodeId: node.nodeId, app: 'web', version: '1.1.0', attemptId: entry.attemptId, issuedAt: c.clock.now(), notAfter: entry.notAfter });
    assert.equal(entry.notAfter, c.clock.now() + 2 * HOUR, "the entry's window ends first");
    // For another node it does not open.
    assert.equal(openDirective(entry.directive, keys, { nodeId: 'n-other', app: 'web', version: '1.1.0', now: c.clock.now() }).ok, false);
    // A newer directive for the same set: the held heartbeat's digest is the same.
    c.clock.advance(1000);
    const b = await beat('directive');
    assert.notEqual(b.body.desired[0].directive.sig, entry.directive.sig);
    assert.equal(desiredDigest(b.body.desired), desiredDigest(a.body.desired));
  });

  test("a v8 heartbeat's trust report is kept for the node, and an older one's leaves none", async () => {
    const report = { scheme: 'tuf', rootVersion: 1, timestampVersion: 2, timestampAgeSeconds: 60 };
    assert.equal((await beat(null, { v: 8, trust: report })).status, 200);
    assert.deepEqual((await c.store.read((tx) => tx.nodes.get(node.nodeId)))?.trust, { ...report, at: c.clock.now() });
    assert.equal((await beat(null)).status, 200);
    assert.equal((await c.store.read((tx) => tx.nodes.get(node.nodeId)))?.trust, null);
  });
});
