import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { callHelper } from '../../src/protocol/client.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, BIN, IS_ROOT, makeReleaseKey, manifestFor, processApp, sri } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

const host = useHost(after, { apps: { web: processApp(), api: processApp() } });
before(() => host.startHelper());

test('agentctl stage --allow-unsigned stages a release that agentctl releases lists', async () => {
  const tgz = releaseTgz('web', '1.0.0');
  const file = path.join(host.scratch, 'web-1.0.0.tgz');
  writeFileSync(file, tgz);
  const r = await agentctl(host, ['stage', 'web', '1.0.0', '--file', file, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.json.version, '1.0.0');
  assert.equal(r.json.signed, false);
  assert.equal(r.json.reused, false);
  const rel = await agentctl(host, ['releases', 'web', '--json']);
  assert.equal(rel.code, 0, rel.stderr);
  assert.deepEqual(rel.json.releases.map((x: { version: string; valid: boolean }) => [x.version, x.valid]), [['1.0.0', true]]);
  assert.deepEqual(rel.json.staging, []);
  const tree = path.join(host.paths.appsDir, 'web/versions/1.0.0');
  assert.equal(statSync(tree).mode & 0o777, 0o555);
  assert.equal(lstatSync(path.join(tree, 'server.js')).mode & 0o777, 0o444);
  const marker = JSON.parse(readFileSync(path.join(tree, '.steward-valid'), 'utf8'));
  assert.equal(marker.tarballIntegrity, sri(tgz));
  const again = await agentctl(host, ['stage', 'web', '1.0.0', '--file', file, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
  assert.equal(again.code, 0);
  assert.equal(again.json.reused, true, 'the same bytes reuse the staged tree');
});

test('a signed release is uploaded over helper.sock and staged with its key', async () => {
  const key = makeReleaseKey(host, ['web']);
  const tgz = releaseTgz('web', '1.1.0');
  const file = path.join(host.scratch, 'web-1.1.0.tgz');
  writeFileSync(file, tgz);
  const mf = path.join(host.scratch, 'web-1.1.0.manifest.json');
  writeFileSync(mf, JSON.stringify(key.sign(manifestFor('web', '1.1.0', tgz))));
  const r = await agentctl(host, ['--socket', host.paths.helperSock, 'stage', 'web', '1.1.0', '--manifest', mf, '--file', file, '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.json.signed, true);
  assert.equal(r.json.keyId, key.keyId);
});

test('an unsigned tarball sent to helper.sock is refused and exits 3', async () => {
  const tgz = releaseTgz('web', '1.2.0');
  const file = path.join(host.scratch, 'web-1.2.0.tgz');
  writeFileSync(file, tgz);
  const withFlag = await agentctl(host, ['--socket', host.paths.helperSock, 'stage', 'web', '1.2.0', '--file', file, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
  assert.equal(withFlag.code, 3, withFlag.stdout);
  assert.equal(withFlag.json.error.code, 'FORBIDDEN');
  // Without the flag, the bytes are uploaded with only an integrity: no manifest, no trust.
  const err: any = await callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'stage', app: 'web', version: '1.2.0', integrity: sri(tgz), upload: tgz.length }, {
    upload: { size: tgz.length, stream: (await import('node:fs')).createReadStream(file) },
  }).catch((e: any) => e);
  assert.equal(err.code, 'FORBIDDEN');
  assert.match(err.message, /only signed manifests/);
  const rel = await agentctl(host, ['releases', 'web', '--json']);
  assert.ok(!rel.json.releases.some((x: { version: string }) => x.version === '1.2.0'));
  assert.deepEqual(rel.json.staging, []);
});

test('a local path sent to helper.sock is refused without being opened', async () => {
  const err: any = await callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'stage', app: 'web', version: '1.3.0', path: '/etc/shadow', integrity: 'sha512-' + 'A'.repeat(86) + '==' }).catch((e: any) => e);
  assert.equal(err.code, 'FORBIDDEN');
});

test('refusals exit 3 and name their reason code', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const file = path.join(host.scratch, 'web-2.0.0.tgz');
  writeFileSync(file, tgz);
  const r = await agentctl(host, ['stage', 'web', '2.0.0', '--file', file, '--integrity', sri(releaseTgz('web', '9.9.9')), '--allow-unsigned']);
  assert.equal(r.code, 3);
  assert.match(r.stderr, /INTEGRITY_MISMATCH/);
  const unknown = await agentctl(host, ['releases', 'nope', '--json']);
  assert.equal(unknown.code, 3);
  assert.equal(unknown.json.error.code, 'UNKNOWN_APP');
});

test('a bad command line exits 2', async () => {
  const r = await agentctl(host, ['stage', 'web']);
  assert.equal(r.code, 2);
  const bad = await agentctl(host, ['stage', 'web', '1.0.0', '--file', 'x.tgz', '--integrity', 'md5-abc', '--allow-unsigned', '--json']);
  assert.equal(bad.code, 2);
  assert.equal(bad.json.error.code, 'USAGE');
});

test('status answers in human and JSON form', async () => {
  const human = await agentctl(host, ['status']);
  assert.equal(human.code, 0);
  assert.match(human.stdout, /^APP\s+RUNNER\s+CURRENT/m);
  const json = await agentctl(host, ['status', '--json']);
  assert.deepEqual(json.json.apps.map((a: { name: string }) => a.name), ['api', 'web']);
});

test('a second helper on the same root exits 1 with HELPER_LOCKED', () => {
  const r = spawnSync(process.execPath, [BIN.helper, '--root', host.root], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /HELPER_LOCKED/);
});

test('agentctl exits 5 when no helper runs for the root', async (t) => {
  const other = useHost(t);
  const r = await agentctl(other, ['status', '--json']);
  assert.equal(r.code, 5);
  assert.equal(r.json.error.code, 'HELPER_UNREACHABLE');
});

test('as root, the staged tree is root-owned', { skip: IS_ROOT ? false : 'needs root (runs in CI as root)' }, () => {
  const st = statSync(path.join(host.paths.appsDir, 'web/versions/1.0.0/server.js'));
  assert.equal(st.uid, 0);
  assert.equal(st.gid, 0);
});
