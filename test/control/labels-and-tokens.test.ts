// Labels (docs/design.md §11): a token's labels go to its node; what a node proposes at enrollment is
// kept under claimed.<key>; operators change labels with `nodes label`; `--select` filters
// `nodes` and `receipts`; tokens are listed and revoked. The CLI runs as a real child process on
// the same database as the in-process control plane.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { ENROLL_PATH } from '../../src/core/control-api.js';
import { REPO } from '../helpers/host.js';
import { FakeClock, FakeNode, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
let c: Control;

// On the system's time: the CLI's tokens are made on it.
before(async () => {
  c = await startControlInProcess({ clock: new FakeClock(Date.now()) });
});
after(() => c.close());

function cli(...args: string[]): Promise<{ code: number; json: any; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', c.dbFile, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        // human output
      }
      resolve({ code: typeof code === 'number' ? code : 1, json, stdout, stderr });
    });
  });
}

const labelsOf = async (nodeId: string) => (await c.store.read((tx) => tx.nodes.get(nodeId)))?.labels;

test("a token's labels go to its node; the node's own proposals are kept under claimed.<key>", async () => {
  const made = await cli('token', 'create', '--label', 'env=staging', '--label', 'tier=web', '--json');
  assert.equal(made.code, 0, made.stderr);
  assert.deepEqual(made.json.labels, { env: 'staging', tier: 'web' });
  const n = new FakeNode(c, 'claims-prod');
  const a = await post(c.server.url, ENROLL_PATH, n.enrollBody(made.json.token, { labels: { env: 'prod', rack: 'r1' } }));
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.deepEqual(await labelsOf(a.body.nodeId), { 'claimed.env': 'prod', 'claimed.rack': 'r1', env: 'staging', tier: 'web' });
});

test('more than 32 labels together refuses the enrollment and leaves the token unspent', async () => {
  const labels = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v']));
  const token = await c.token(3_600_000, labels);
  const n = new FakeNode(c, 'greedy');
  const refused = await post(c.server.url, ENROLL_PATH, n.enrollBody(token, { labels }));
  assert.deepEqual([refused.status, refused.body.error.code], [400, 'BAD_BODY']);
  assert.match(refused.body.error.message, /32/);
  const ok = await post(c.server.url, ENROLL_PATH, n.enrollBody(token, { labels: { few: 'yes' } }));
  assert.equal(ok.status, 200, 'the same token still enrolls');
  for (const bad of [{ Env: 'x' }, { env: 'a b' }, { ['k'.repeat(56)]: 'v' }, { env: 7 }]) {
    const r = await post(c.server.url, ENROLL_PATH, n.enrollBody(await c.token(), { labels: bad }));
    assert.deepEqual([r.status, r.body.error.code], [400, 'BAD_BODY'], JSON.stringify(bad));
  }
});

test('nodes label sets and removes operator labels on named or selected nodes; claimed.* keys are not an operator\'s', async () => {
  const x = await new FakeNode(c, 'x').enroll(await c.token(3_600_000, { env: 'prod' }));
  const y = await new FakeNode(c, 'y').enroll(await c.token(3_600_000, { env: 'prod', tier: 'db' }));
  const set = await cli('nodes', 'label', x.nodeId, y.nodeId, 'zone=a', 'tier-', '--json');
  assert.equal(set.code, 0, set.stderr);
  assert.deepEqual(await labelsOf(x.nodeId), { env: 'prod', zone: 'a' });
  assert.deepEqual(await labelsOf(y.nodeId), { env: 'prod', zone: 'a' });
  const sel = await cli('nodes', 'label', '--select', 'env=prod,zone=a', 'canary=yes', '--json');
  assert.deepEqual(sel.json.nodes.map((n: { nodeId: string }) => n.nodeId).sort(), [x.nodeId, y.nodeId].sort());
  for (const args of [['nodes', 'label', x.nodeId, 'claimed.env=prod'], ['nodes', 'label', x.nodeId], ['nodes', 'label', 'zone=b'], ['nodes', 'label', x.nodeId, 'Bad=1'], ['nodes', '--select', 'env in (']]) {
    const r = await cli(...args, '--json');
    assert.deepEqual([r.code, r.json.error.code], [2, 'USAGE'], args.join(' '));
  }
  const unknown = await cli('nodes', 'label', 'n-000000000000', 'a=b', '--json');
  assert.deepEqual([unknown.code, unknown.json.error.code], [1, 'NOT_FOUND']);
  assert.deepEqual(await labelsOf(x.nodeId), { canary: 'yes', env: 'prod', zone: 'a' }, 'a refused change changes nothing');
});

test('--select filters nodes and receipts by the labels as they are now', async () => {
  const s = await new FakeNode(c, 'sel-s').enroll(await c.token(3_600_000, { env: 'sel-staging' }));
  const p = await new FakeNode(c, 'sel-p').enroll(await c.token(3_600_000, { env: 'sel-prod' }));
  for (const n of [s, p]) {
    n.setCurrent('web', '1.0.0');
    assert.equal((await n.heartbeat({ receipts: [n.receipt({ attemptId: `manual-${n.hostname}` })] })).status, 200);
  }
  const nodes = await cli('nodes', '--select', 'env=sel-prod', '--json');
  assert.deepEqual(nodes.json.nodes.map((n: { nodeId: string; labels: object }) => [n.nodeId, n.labels]), [[p.nodeId, { env: 'sel-prod' }]]);
  const receipts = await cli('receipts', '--select', 'env in (sel-staging)', '--json');
  assert.deepEqual(receipts.json.receipts.map((r: { nodeId: string }) => r.nodeId), [s.nodeId]);
  const human = await cli('nodes', '--select', 'env=sel-prod');
  assert.match(human.stdout, /env=sel-prod/);
});

test('token list shows each token by id with its state and labels, never the token; a revoked token enrolls nothing', async () => {
  const made = await cli('token', 'create', '--ttl', '10m', '--label', 'env=edge', '--json');
  const used = await cli('token', 'create', '--json');
  await new FakeNode(c, 'used').enroll(used.json.token);
  const list = await cli('token', 'list', '--json');
  assert.equal(list.code, 0, list.stderr);
  const byId = new Map(list.json.tokens.map((t: { id: string }) => [t.id, t]));
  assert.deepEqual([(byId.get(made.json.id) as any).state, (byId.get(made.json.id) as any).labels], ['valid', { env: 'edge' }]);
  assert.equal((byId.get(used.json.id) as any).state, 'used');
  assert.equal(list.stdout.includes(made.json.token), false, 'the token itself is never shown again');
  const revoked = await cli('token', 'revoke', made.json.id, '--json');
  assert.deepEqual([revoked.code, revoked.json.revoked], [0, made.json.id]);
  const enroll = await post(c.server.url, ENROLL_PATH, new FakeNode(c, 'late').enrollBody(made.json.token));
  assert.deepEqual([enroll.status, enroll.body.error.code], [401, 'TOKEN_INVALID']);
  assert.equal((await cli('token', 'list', '--json')).json.tokens.find((t: { id: string }) => t.id === made.json.id).state, 'revoked');
  const usedAgain = await cli('token', 'revoke', used.json.id, '--json');
  assert.deepEqual([usedAgain.code, usedAgain.json.error.code], [3, 'TOKEN_INVALID']);
  const none = await cli('token', 'revoke', 'ffffffffffffffff', '--json');
  assert.deepEqual([none.code, none.json.error.code], [1, 'NOT_FOUND']);
  const bad = await cli('token', 'create', '--label', 'claimed.env=prod', '--json');
  assert.deepEqual([bad.code, bad.json.error.code], [2, 'USAGE']);
});
