// A fleet's TUF repository made through the commands alone (trust init, sign-root x2, delegate,
// sign-root x2, release add with the delegation's keys, release allow-downgrade) is accepted by
// tuf-js's real Updater once online-signed snapshot and timestamp name it; release add's
// refusals under TUF come before anything is uploaded. The trust routes are the fake admin
// listener's (test/helpers/fake-trust-admin.ts), every other route a real `steward-control serve`.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { metadataBytes, newSnapshot, newTimestamp } from '../../src/core/trust/build.js';
import { delegatedRoleName } from '../../src/core/trust/roles.js';
import { signMetadata, tufKeyIdOf } from '../../src/platform/trust/tuf-keys.js';
import { controlCli } from '../helpers/fleet.js';
import { startFakeTrustAdmin, type FakeTrustAdmin } from '../helpers/fake-trust-admin.js';
import { startServeProcess, type ServeProcess } from '../helpers/serve-process.js';
import { controlAt, writeKeyPair, type KeyFiles } from '../helpers/trust-cli.js';
import { updaterFor } from '../helpers/tuf-fetcher.js';
import type { TufRepo } from '../helpers/tuf-repo.js';
import { releaseOf } from '../helpers/object-releases.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-trust-release-'));
let serve: ServeProcess;
let fake: FakeTrustAdmin;
let token: string;
let root: KeyFiles[];
let web: KeyFiles[];
let w1KeyId: string;
const run = (args: string[]) => controlAt(fake.url, args, token);
const idOf = (k: KeyFiles) => tufKeyIdOf(createPrivateKey(readFileSync(k.key)));

before(async () => {
  const db = path.join(dir, 'control.db');
  assert.equal((await controlCli(db, ['init'])).code, 0);
  const add = await controlCli(db, ['operator', 'add', 'ada', '--role', 'admin', '--json']);
  token = (add.json as { token: string }).token;
  serve = await startServeProcess(db, ['--admin-listen', '127.0.0.1:0']);
  fake = await startFakeTrustAdmin({ upstream: serve.urls.admin! });
  root = ['r1', 'r2', 'r3'].map((n) => writeKeyPair(dir, n));
  web = ['w1', 'w2', 'w3'].map((n) => writeKeyPair(dir, n));
});
after(async () => {
  await fake?.close();
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ok = async (args: string[]) => {
  const r = await run(args);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r;
};

test('without a repository, release add takes one --key and behaves as before', async () => {
  const file = path.join(dir, 'web-0.9.0.tgz');
  writeFileSync(file, 'web 0.9.0');
  const two = await run(['release', 'add', 'web', '0.9.0', '--file', file, '--url', 'https://releases.invalid/web-0.9.0.tgz', '--key', web[0]!.key, '--key', web[1]!.key, '--json']);
  assert.deepEqual([two.code, two.json.error.code], [2, 'USAGE']);
  assert.match(two.json.error.message, /--key was given 2 times, but the server has no TUF repository/);
  const one = await ok(['release', 'add', 'web', '0.9.0', '--file', file, '--url', 'https://releases.invalid/web-0.9.0.tgz', '--key', web[0]!.key, '--json']);
  assert.equal(one.json.change, 'added');
  assert.equal(one.json.trust, undefined);
  w1KeyId = one.json.keyId;
  assert.equal(fake.apps.size, 0);
});

test('a repository made through the commands is accepted by tuf-js\'s Updater, and release add under TUF refuses too few keys before uploading anything', async () => {
  await ok(['trust', 'init', '--keys', root.map((k) => k.pub).join(','), '--threshold', '2']);
  await ok(['trust', 'sign-root', '--key', root[0]!.key]);
  await ok(['trust', 'sign-root', '--key', root[2]!.key]);
  // Root v1 published, the targets v1 put pending with it: one more root key holder signs it.
  await ok(['trust', 'sign-root', '--key', root[1]!.key]);
  await ok(['trust', 'delegate', 'web', '--keys', web.map((k) => k.pub).join(','), '--threshold', '2']);
  await ok(['trust', 'sign-root', '--key', root[1]!.key]);
  await ok(['trust', 'sign-root', '--key', root[0]!.key]);
  assert.equal(fake.targets.length, 2, 'targets v1 and v2 published');

  const tgz = path.join(dir, 'web-1.0.0.tgz');
  writeFileSync(tgz, releaseOf('1.0.0', 'console.log(1)\n'));
  const base = ['release', 'add', 'web', '1.0.0', '--file', tgz, '--base-url', 'https://control.invalid'];
  const before = fake.requests.length;
  const few = await run([...base, '--key', web[0]!.key, '--json']);
  assert.deepEqual([few.code, few.json.error.code], [2, 'USAGE'], few.stdout + few.stderr);
  assert.match(few.json.error.message, /app\.web needs 2 signatures and --key gave 1: pass 1 more --key .*nothing was uploaded/);
  const twice = await run([...base, '--key', web[0]!.key, '--key', web[0]!.key, '--json']);
  assert.match(twice.json.error.message, /app\.web needs 2 signatures and distinct --key gave 1/);
  const stranger = await run([...base, '--key', web[0]!.key, '--key', root[0]!.key, '--json']);
  assert.deepEqual([stranger.code, stranger.json.error.code], [3, 'FORBIDDEN']);
  assert.match(stranger.json.error.message, new RegExp(`r1\\.key \\(TUF key id ${idOf(root[0]!)}\\) is not a key of app\\.web`));
  assert.deepEqual(fake.requests.slice(before).map((r) => `${r.method} ${r.path}`), ['GET /v1/admin/trust', 'GET /v1/admin/trust', 'GET /v1/admin/trust'], 'only the status was asked: nothing uploaded');

  const added = await ok([...base, '--key', web[0]!.key, '--key', web[2]!.key, '--json']);
  assert.equal(added.json.change, 'added');
  assert.deepEqual(added.json.trust, { role: 'app.web', version: 2, targets: ['web/1.0.0/index.json', 'web/1.0.0/manifest.json'], keyids: [idOf(web[0]!), idOf(web[2]!)].sort() });
  const human = await ok(['release', 'add', 'web', '1.0.0', '--file', tgz, '--base-url', 'https://control.invalid', '--key', web[0]!.key, '--key', web[1]!.key]);
  assert.match(human.stdout, /\n  TUF: app\.web targets v3 signed here by 2 keys \(.*\) and uploaded: web\/1\.0\.0\/index\.json, web\/1\.0\.0\/manifest\.json\n$/);

  // Going back: the downgrade authorization becomes the delegation's target too.
  // w1 signs the envelope: the catalog allows it for web since 0.9.0, wherever it is among --key.
  const down = await ok(['release', 'allow-downgrade', 'web', '1.0.0', '--key', web[2]!.key, '--key', web[0]!.key, '--json']);
  assert.equal(down.json.keyId, w1KeyId);
  assert.deepEqual(down.json.trust.targets, ['web/1.0.0/downgrade.json', 'web/1.0.0/index.json', 'web/1.0.0/manifest.json']);
  const notTuf = await run(['release', 'allow-downgrade', 'web', '0.9.0', '--key', web[1]!.key, '--key', web[0]!.key, '--json']);
  assert.deepEqual([notTuf.code, notTuf.json.error.code], [1, 'NOT_FOUND']);
  assert.match(notTuf.json.error.message, /web 0\.9\.0 is not among app\.web's targets/);

  // The repository as a host's helper gets it: every root, the targets, the app's targets, and a
  // snapshot and timestamp signed here with the fake server's online keys.
  const files = new Map<string, Buffer>();
  for (const r of fake.roots) files.set(`${r.signed.version}.root.json`, metadataBytes(r));
  const targets = fake.targets.at(-1)!;
  files.set(`${targets.signed.version}.targets.json`, metadataBytes(targets));
  const app = fake.apps.get('web')!;
  const role = delegatedRoleName('web');
  files.set(`${app.signed.version}.${role}.json`, metadataBytes(app));
  const now = Date.now();
  const snapshot = newSnapshot(new Map([['targets', targets.signed.version], [role, app.signed.version]]), 1, now);
  signMetadata(snapshot, fake.online.snapshot[0]!);
  const snapshotBytes = metadataBytes(snapshot);
  files.set('1.snapshot.json', snapshotBytes);
  const timestamp = newTimestamp(snapshotBytes, 1, 1, now);
  signMetadata(timestamp, fake.online.timestamp[0]!);
  files.set('timestamp.json', metadataBytes(timestamp));
  const repoDir = mkdtempSync(path.join(dir, 'repo-'));
  writeFileSync(path.join(repoDir, '1.root.json'), files.get('1.root.json')!);
  const { updater } = updaterFor({ dir: repoDir, files } as unknown as TufRepo);
  await updater.refresh();
  const info = await updater.getTargetInfo('web/1.0.0/manifest.json');
  assert.ok(info, 'the manifest target is found under app.web');
  // Its bytes are the payload of the plain manifest, the one every desired entry carries and the
  // helper checks (the index is the target index.json).
  const listed = await ok(['release', 'list', 'web', '--json']);
  const rel = listed.json.releases.find((x: { version: string }) => x.version === '1.0.0');
  const payload = Buffer.from(rel.manifest.payload, 'base64');
  assert.equal(info.length, payload.length);
  assert.equal(info.hashes['sha256'], createHash('sha256').update(payload).digest('hex'));
  assert.ok(await updater.getTargetInfo('web/1.0.0/index.json'));
  assert.ok(await updater.getTargetInfo('web/1.0.0/downgrade.json'));
  assert.equal(await updater.getTargetInfo('web/0.9.0/manifest.json'), undefined);

  for (const r of fake.requests) {
    assert.doesNotMatch(r.body.toString('latin1'), /PRIVATE KEY/, `${r.method} ${r.path} holds a PEM private key`);
  }
});
