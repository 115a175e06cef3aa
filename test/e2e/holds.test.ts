import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, makeReleaseKey, manifestFor, processApp, type ReleaseKey } from '../helpers/host.js';
import { appStatus } from '../helpers/app-processes.js';
import { appRelease, fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';
import { callHelper } from '../../src/protocol/client.js';
import { helperClient } from '../../src/protocol/helper-client.js';
import { AGENT_BY } from '../../src/protocol/schemas.js';

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
let key: ReleaseKey;
let port: number;

before(async () => {
  port = await freePort();
  key = makeReleaseKey(host, ['web']);
  await host.startHelper();
});

// A signed update over helper.sock: the tarball is uploaded, the manifest names its bytes.
function helperSockUpdate(version: string) {
  const tgz = appRelease('web', version, port);
  const file = path.join(host.scratch, `web-${version}-signed.tgz`);
  const mf = path.join(host.scratch, `web-${version}.manifest.json`);
  writeFileSync(file, tgz);
  writeFileSync(mf, JSON.stringify(key.sign(manifestFor('web', version, tgz))));
  return agentctl(host, ['--socket', host.paths.helperSock, 'update', 'web', version, '--manifest', mf, '--file', file, '--json']);
}

test('an update over admin.sock puts a hold on the app', { timeout: 60_000 }, async () => {
  const r = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const web = await appStatus(host, 'web');
  assert.ok(web.hold, 'status shows the hold');
  assert.equal(typeof web.hold.by, 'string');
  assert.equal(typeof web.hold.at, 'number');
  assert.match(web.hold.reason, /1\.0\.0/);
});

test('a signed update over helper.sock is refused HELD while the app is held', { timeout: 60_000 }, async () => {
  const r = await helperSockUpdate('2.0.0');
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'HELD');
  const web = await appStatus(host, 'web');
  assert.equal(web.current, '1.0.0');
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('agentctl release-hold clears the hold and the helper.sock update then works', { timeout: 60_000 }, async () => {
  const rel = await agentctl(host, ['release-hold', 'web', '--json']);
  assert.equal(rel.code, 0, rel.stderr + rel.stdout);
  assert.equal(rel.json.released, true);
  assert.equal((await appStatus(host, 'web')).hold, null);
  const r = await helperSockUpdate('2.0.0');
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'active');
  assert.equal(await fetchVersion(port), '2.0.0');
  assert.equal((await appStatus(host, 'web')).hold, null, 'a helper.sock update puts no hold');
});

test('agentctl rollback activates previous, sets a hold, and helper.sock cannot undo it', { timeout: 60_000 }, async () => {
  const rb = await agentctl(host, ['rollback', 'web', '--json']);
  assert.equal(rb.code, 0, rb.stderr + rb.stdout);
  assert.equal(rb.json.outcome, 'active');
  assert.equal(rb.json.fromVersion, '2.0.0');
  assert.equal(rb.json.targetVersion, '1.0.0');
  assert.equal(await fetchVersion(port), '1.0.0');
  const web = await appStatus(host, 'web');
  assert.equal(web.current, '1.0.0');
  assert.ok(web.hold, 'the rollback holds the app');
  assert.match(web.hold.reason, /rollback/);
  // Who asked, as the kernel recorded them at connect (the peer is read once the rollback has a target).
  assert.match(web.hold.by, /^(\S+ \(uid \d+\)|uid \d+) over (admin|helper)\.sock$/);

  const undo = await helperSockUpdate('2.0.0');
  assert.equal(undo.code, 3, undo.stderr + undo.stdout);
  assert.equal(undo.json.error.code, 'HELD');
  const rbAgain = await agentctl(host, ['--socket', host.paths.helperSock, 'rollback', 'web', '--json']);
  assert.equal(rbAgain.code, 3, rbAgain.stderr + rbAgain.stdout);
  assert.equal(rbAgain.json.error.code, 'HELD');
  assert.equal((await appStatus(host, 'web')).current, '1.0.0');
  assert.equal(await fetchVersion(port), '1.0.0');
});

// docs/design.md §18: a `target revert` reaches the host as the agent's rollback over helper.sock
// (`by: steward-agent`, the control plane's attemptId). The control plane asked for it, so it puts
// no hold: the target's next wish applies again. Anyone else's rollback over helper.sock holds.
test("the agent's rollback for a target revert puts no hold; another helper.sock rollback does", { timeout: 60_000 }, async () => {
  const released = await agentctl(host, ['release-hold', 'web', '--json']);
  assert.equal(released.code, 0, released.stderr + released.stdout);
  const before = await appStatus(host, 'web');
  assert.equal(before.hold, null);
  const helper = helperClient((request, opts) => callHelper(host.paths.helperSock, request, opts));
  const revert = await helper.rollback({ app: 'web', attemptId: 'revert-run-7-node-1', by: AGENT_BY });
  assert.equal((revert as { outcome?: string }).outcome, 'active', JSON.stringify(revert));
  const after = await appStatus(host, 'web');
  assert.equal(after.current, before.previous, 'the version it ran before');
  assert.equal(after.hold, null, 'no hold: the control plane asked for it');
  assert.equal(await fetchVersion(port), after.current);

  const local = await agentctl(host, ['--socket', host.paths.helperSock, 'rollback', 'web', '--json']);
  assert.equal(local.code, 0, local.stderr + local.stdout);
  const held = await appStatus(host, 'web');
  assert.equal(held.current, after.previous);
  assert.ok(held.hold, "a group member's rollback holds the app");
  assert.match(held.hold.reason, /rollback/);
});
