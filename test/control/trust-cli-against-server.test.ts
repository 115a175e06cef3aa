// The trust CLI (src/control/cli, `steward-control trust ...`) against this branch's real admin routes
// (docs/design.md §21.4), not the CLI tests' stand-in: init, two root key holders sign (root v1
// then targets v1 publish), an app delegated and signed; the server's status agrees, and what a
// node fetches verifies with tuf-js from root 1.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { enrollNodes, FakeClock, startControlInProcess, type Control, type FakeNode } from '../helpers/control-harness.js';
import { controlAt, writeKeyPair, type KeyFiles } from '../helpers/trust-cli.js';
import { filesOf, getBundle, updaterOver } from '../helpers/trust-admin.js';
import { releaseOf } from '../helpers/object-releases.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-trust-cli-server-'));
let c: Control;
let token: string;
let node: FakeNode;
let a: KeyFiles, b: KeyFiles, cc: KeyFiles, w1: KeyFiles, w2: KeyFiles, w3: KeyFiles;
const run = (args: string[]) => controlAt(c.server.url, args, token);

before(async () => {
  c = await startControlInProcess({ admin: {}, clock: new FakeClock(Date.now()) });
  token = await addOperator(c.store, 'adam', 'admin');
  [node] = (await enrollNodes(c, 1)) as [FakeNode];
  [a, b, cc, w1, w2, w3] = (['a', 'b', 'c', 'w1', 'w2', 'w3'] as const).map((n) => writeKeyPair(dir, n)) as [KeyFiles, KeyFiles, KeyFiles, KeyFiles, KeyFiles, KeyFiles];
});
after(async () => {
  await c.close();
  rmSync(dir, { recursive: true, force: true });
});

const status = async () => (await adminCall(c.server.url, '/v1/admin/trust', { token })).body;

test('init, sign-root twice, delegate, sign-root twice: the server publishes root v1, targets v1 and v2, and a node verifies them', async () => {
  const init = await run(['trust', 'init', '--threshold', '2', '--keys', `${a.pub},${b.pub},${cc.pub}`, '--json']);
  assert.equal(init.code, 0, init.stdout + init.stderr);
  assert.equal((await status()).pending.root.version, 1);
  const first = await run(['trust', 'sign-root', '--key', a.key, '--json']);
  assert.equal(first.code, 0, first.stdout + first.stderr);
  assert.equal((await status()).root, null, 'one signature of two');
  const second = await run(['trust', 'sign-root', '--key', cc.key, '--json']);
  assert.equal(second.code, 0, second.stdout + second.stderr);
  const third = await run(['trust', 'sign-root', '--key', b.key, '--json']);
  assert.equal(third.code, 0, third.stdout + third.stderr);
  let s = await status();
  assert.deepEqual([s.root?.version, s.targets?.version, s.repository], [1, 1, true], JSON.stringify(s));
  const del = await run(['trust', 'delegate', 'web', '--keys', `${w1.pub},${w2.pub},${w3.pub}`, '--threshold', '2', '--json']);
  assert.equal(del.code, 0, del.stdout + del.stderr);
  for (const k of [b, a]) {
    const r = await run(['trust', 'sign-root', '--key', k.key, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  }
  s = await status();
  assert.equal(s.targets.version, 2);
  assert.deepEqual(s.apps.map((x: { app: string; threshold: number }) => [x.app, x.threshold]), [['web', 2]]);
  const human = await run(['trust', 'status']);
  assert.equal(human.code, 0, human.stdout + human.stderr);
  const exported = path.join(dir, 'root.json');
  const ex = await run(['trust', 'export-root', '--out', exported, '--json']);
  assert.equal(ex.code, 0, ex.stdout + ex.stderr);
  const bundle = await getBundle(c.server.url, node.nodeId, node.node.privateKey, c.clock.now(), '?root=1');
  assert.equal(bundle.status, 200, JSON.stringify(bundle.body));
  const updater = updaterOver(readFileSync(exported), filesOf(bundle.body));
  await updater.refresh();
  // No targets of app.web are published yet, so the snapshot names none: tuf-js finds no release
  // of web (it fails looking for the role's file in the snapshot rather than answering undefined).
  const found = await updater.getTargetInfo('web/1.0.0/manifest.json').catch(() => undefined);
  assert.equal(found, undefined);
});

test('release add signs the app targets with the delegation keys and the server publishes them: the host finds the release', async () => {
  const tgz = path.join(dir, 'web-1.0.0.tgz');
  writeFileSync(tgz, releaseOf('1.0.0', 'console.log(1)\n'));
  const added = await run(['release', 'add', 'web', '1.0.0', '--file', tgz, '--base-url', c.server.url, '--key', w1.key, '--key', w3.key, '--json']);
  assert.equal(added.code, 0, added.stdout + added.stderr);
  assert.equal(added.json.trust.role, 'app.web');
  const s = await status();
  assert.equal(s.apps[0].version, added.json.trust.version);
  const bundle = await getBundle(c.server.url, node.nodeId, node.node.privateKey, c.clock.now(), '?root=1');
  const updater = updaterOver(readFileSync(path.join(dir, 'root.json')), filesOf(bundle.body));
  await updater.refresh();
  const info = await updater.getTargetInfo('web/1.0.0/manifest.json');
  assert.ok(info, 'the release is a target of app.web');
  assert.deepEqual(info.custom, { steward: { app: 'web', version: '1.0.0' } });
});
