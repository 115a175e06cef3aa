import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { appStatus } from '../helpers/app-processes.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, makeReleaseKey, manifestFor, processApp, sri } from '../helpers/host.js';
import { appRelease, freePort, releaseArgs } from '../fixtures/app-releases.js';

// The attack: a version failed here and was rolled back, so it is quarantined; a member of group
// steward (the agent, so the control plane) sends it again at once with --force over helper.sock,
// to break the app again and again. --force is admin.sock only (docs/design.md §3.3, §7).

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
let signedArgs: string[];

before(async () => {
  const port = await freePort();
  const key = makeReleaseKey(host, ['web']);
  await host.startHelper();
  const good = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(good.code, 0, good.stderr + good.stdout);
  const tgz = appRelease('web', '2.0.0', port, { health: 'fail', timeoutMs: 1000 });
  const file = path.join(host.scratch, 'web-2.0.0.tgz');
  const manifest = path.join(host.scratch, 'web-2.0.0.manifest.json');
  writeFileSync(file, tgz);
  writeFileSync(manifest, JSON.stringify(key.sign(manifestFor('web', '2.0.0', tgz))));
  const bad = await agentctl(host, ['update', 'web', '2.0.0', '--file', file, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
  assert.equal(bad.code, 4, bad.stderr + bad.stdout);
  const rel = await agentctl(host, ['release-hold', 'web', '--json']);
  assert.equal(rel.code, 0, rel.stderr + rel.stdout);
  signedArgs = ['--manifest', manifest, '--file', file];
});

test('the quarantined version is refused over helper.sock, with --force or without, and nothing changes', { timeout: 60_000 }, async () => {
  const before = await appStatus(host, 'web');
  assert.deepEqual(before.quarantined, ['2.0.0']);
  const plain = await agentctl(host, ['--socket', host.paths.helperSock, 'update', 'web', '2.0.0', ...signedArgs, '--json']);
  assert.equal(plain.code, 3, plain.stderr + plain.stdout);
  assert.equal(plain.json.error?.code ?? plain.json.reason?.code, 'QUARANTINED');
  const forced = await agentctl(host, ['--socket', host.paths.helperSock, 'update', 'web', '2.0.0', ...signedArgs, '--force', '--json']);
  assert.equal(forced.code, 3, forced.stderr + forced.stdout);
  assert.equal(forced.json.error.code, 'FORBIDDEN');
  assert.match(forced.json.error.message, /force/);
  const after = await appStatus(host, 'web');
  assert.equal(after.current, '1.0.0');
  assert.deepEqual(after.lastAttempt, before.lastAttempt, 'no new attempt ran');
  assert.deepEqual(after.quarantined, ['2.0.0']);
});

test('a stage with --force over helper.sock is FORBIDDEN too', { timeout: 30_000 }, async () => {
  const r = await agentctl(host, ['--socket', host.paths.helperSock, 'stage', 'web', '2.0.0', ...signedArgs, '--force', '--json']);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'FORBIDDEN');
});
