// `steward-control trust init|sign-root|delegate|rotate|status` (docs/trust.md, "TUF: offline
// keys") against a fake admin listener (test/helpers/fake-trust-admin.ts): the metadata they
// upload verifies under @tufjs/models with the right keys and thresholds, what they refuse, their
// --json, and that no private key byte leaves the process.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DIRECTOR_FIELD } from '../../src/core/trust/roles.js';
import { tufKeyIdOf } from '../../src/platform/trust/tuf-keys.js';
import { startFakeTrustAdmin, type FakeTrustAdmin } from '../helpers/fake-trust-admin.js';
import { controlAt, writeKeyPair, type KeyFiles } from '../helpers/trust-cli.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-trust-ceremony-'));
let fake: FakeTrustAdmin;
let a: KeyFiles, b: KeyFiles, c: KeyFiles, d: KeyFiles, w1: KeyFiles, w2: KeyFiles, w3: KeyFiles;
const idOf = (k: KeyFiles) => tufKeyIdOf(createPrivateKey(readFileSync(k.key)));
const run = (args: string[]) => controlAt(fake.url, args);

before(async () => {
  fake = await startFakeTrustAdmin();
  const k = (n: string) => writeKeyPair(dir, n);
  [a, b, c, d, w1, w2, w3] = [k('a'), k('b'), k('c'), k('d'), k('w1'), k('w2'), k('w3')];
});
after(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

// No request body ever held a private key: no PEM private key, no key's raw private bytes.
function assertNoPrivateKeySent(): void {
  const secrets = [a, b, c, d, w1, w2, w3].flatMap((k) => {
    const pem = readFileSync(k.key, 'utf8');
    const jwk = createPrivateKey(pem).export({ format: 'jwk' }) as { d: string };
    const raw = Buffer.from(jwk.d, 'base64url');
    return [jwk.d, raw.toString('hex'), raw.toString('base64'), pem.split('\n')[1]!];
  });
  for (const r of fake.requests) {
    const text = r.body.toString('utf8');
    assert.doesNotMatch(text, /PRIVATE KEY/, `${r.method} ${r.path} holds a PEM private key`);
    for (const s of secrets) assert.ok(!text.includes(s), `${r.method} ${r.path} holds a private key's bytes`);
  }
}

test('trust init refuses a threshold it cannot meet, a duplicate key, a file that is no Ed25519 public key or is missing, before asking the server anything', async () => {
  writeFileSync(path.join(dir, 'junk.pub'), 'not a key\n');
  const cases: Array<[string[], RegExp]> = [
    [['--keys', `${a.pub},${b.pub}`, '--threshold', '3'], /--threshold 3 is more than the 2 keys of --keys/],
    [['--keys', `${a.pub},${b.pub}`, '--threshold', '0'], /--threshold "0" is not an integer from 1/],
    [['--keys', `${a.pub},${a.pub}`], /a\.pub and .*a\.pub are the same key/],
    [['--keys', `${a.pub},${path.join(dir, 'junk.pub')}`], /junk\.pub is not an Ed25519 public key/],
    [['--keys', `${a.pub},${b.key}`], /b\.key holds a private key/],
    [['--keys', a.pub, '--targets-keys', b.pub, '--targets-threshold', '2'], /--targets-threshold 2 is more than the 1 key of --targets-keys/],
  ];
  for (const [args, message] of cases) {
    const r = await run(['trust', 'init', ...args, '--json']);
    assert.deepEqual([r.code, r.json?.error?.code], [2, 'USAGE'], `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.json.error.message, message);
  }
  const missing = await run(['trust', 'init', '--keys', path.join(dir, 'nope.pub'), '--json']);
  assert.deepEqual([missing.code, missing.json.error.code], [1, 'NOT_FOUND']);
  assert.match(missing.json.error.message, /nope\.pub/);
  assert.equal(fake.requests.length, 0, 'nothing was asked of the server');
});

test('the ceremony: init, two root key holders sign, delegate an app, two sign again; each upload verifies under the right keys', async () => {
  const init = await run(['trust', 'init', '--threshold', '2', '--keys', `${a.pub},${b.pub},${c.pub}`, '--json']);
  assert.equal(init.code, 0, init.stdout + init.stderr);
  assert.deepEqual(Object.keys(init.json).sort(), ['next', 'online', 'pending', 'signers']);
  assert.deepEqual(init.json.pending.root.keyids, [idOf(a), idOf(b), idOf(c)].sort());
  assert.equal(init.json.pending.root.threshold, 2);
  assert.match(init.json.next, /^steward-control --server http:\/\/127\.0\.0\.1:\d+ trust sign-root --key /);
  const root = fake.pending.root!;
  assert.equal(root.signed.version, 1);
  assert.equal(root.signed.roles['root']!.threshold, 2);
  assert.deepEqual(root.signed.roles['targets']!.keyIDs, root.signed.roles['root']!.keyIDs, 'targets takes the root keys unless told');
  assert.deepEqual(root.signed.roles['snapshot']!.keyIDs, [tufKeyIdOf(fake.online.snapshot[0]!)]);
  assert.deepEqual(root.signed.roles['timestamp']!.keyIDs, [tufKeyIdOf(fake.online.timestamp[0]!)]);
  assert.deepEqual(root.signed.unrecognizedFields[DIRECTOR_FIELD], { keyids: [tufKeyIdOf(fake.online.director[0]!)], threshold: 1 });
  assert.equal(Object.keys(root.signatures).length, 0, 'uploaded unsigned');
  // The server takes the targets only under a published root: they come with root v1's publication.
  assert.equal(fake.pending.targets, null);

  // A second init while one is pending is refused unless --replace.
  const again = await run(['trust', 'init', '--keys', `${a.pub},${b.pub}`, '--json']);
  assert.deepEqual([again.code, again.json.error.code], [2, 'USAGE']);
  assert.match(again.json.error.message, /root v1 is already pending/);
  // A server that answers its online keys only once: --replace takes them from the pending root.
  fake.onlineOnce = true;
  try {
    const replaced = await run(['trust', 'init', '--threshold', '2', '--keys', `${a.pub},${b.pub},${c.pub}`, '--replace', '--json']);
    assert.equal(replaced.code, 0, replaced.stdout + replaced.stderr);
    assert.deepEqual(replaced.json.online, init.json.online);
    assert.equal(fake.online.snapshot.length, 1);
  } finally {
    fake.onlineOnce = false;
  }

  // A key that is not a root key: refused, named by its TUF key id.
  const stranger = await run(['trust', 'sign-root', '--key', d.key, '--json']);
  assert.deepEqual([stranger.code, stranger.json.error.code], [3, 'FORBIDDEN']);
  assert.match(stranger.json.error.message, new RegExp(`key ${idOf(d)} .*may not sign`));

  const first = await run(['trust', 'sign-root', '--key', a.key]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /^signing:\n  root v1, expires .* \(in 36[45] days\)\n    root: 2 of 3: /);
  assert.match(first.stdout, /signed root v1 with key [0-9a-f]{64}\n  1 of 2 signatures of root v1's root keys .*\n  another key holder runs: steward-control --server \S+ trust sign-root --key <your root key>\.pem\n$/);
  assert.ok(fake.pending.root, 'not published on one signature');
  const sigPosts = fake.requests.filter((r) => r.path.endsWith('/signatures'));
  assert.equal(sigPosts.length, 1);
  for (const p of sigPosts) {
    const body = JSON.parse(p.body.toString());
    assert.deepEqual(Object.keys(body), ['signatures']);
    assert.deepEqual(body.signatures.map((s: { keyid: string }) => s.keyid), [idOf(a)]);
    assert.match(body.signatures[0].sig, /^[0-9a-f]{128}$/);
  }

  // The second publishes root v1, puts the empty targets v1 pending and signs it: 1 of 2.
  const second = await run(['trust', 'sign-root', '--key', c.key, '--json']);
  assert.equal(second.code, 0, second.stdout + second.stderr);
  assert.deepEqual(
    second.json.signed.map((s: { role: string; version: number; published: boolean; thresholdsMet: boolean }) => [s.role, s.version, s.published, s.thresholdsMet]),
    [['root', 1, true, true], ['targets', 1, false, false]],
  );
  const third = await run(['trust', 'sign-root', '--key', b.key]);
  assert.match(third.stdout, /^signing:\n  targets v1, expires .*\n    delegates no app yet\nsigned targets v1 with key .*\n  2 of 2 signatures of root v1's targets keys .*\n  published targets v1\n$/);
  const published = fake.roots[0]!;
  published.verifyDelegate('root', published);
  published.verifyDelegate('targets', fake.targets[0]!);

  // Initialized: init is refused, rotate is the way.
  const reinit = await run(['trust', 'init', '--keys', `${a.pub},${b.pub}`, '--json']);
  assert.deepEqual([reinit.code, reinit.json.error.code], [2, 'USAGE']);
  assert.match(reinit.json.error.message, /already has root v1: .*trust rotate/);

  // The web team's keys, delegated; the root key holders sign the top-level targets v2.
  const del = await run(['trust', 'delegate', 'web', '--keys', `${w1.pub},${w2.pub},${w3.pub}`, '--threshold', '2', '--json']);
  assert.equal(del.code, 0, del.stdout + del.stderr);
  assert.deepEqual([del.json.role, del.json.replaced, del.json.threshold, del.json.pending.targets.version], ['app.web', false, 2, 2]);
  assert.deepEqual(del.json.mustSign, [{ of: "root v1's targets keys", threshold: 2, keyids: [idOf(a), idOf(b), idOf(c)].sort() }]);
  const notRoot = await run(['trust', 'sign-root', '--key', w1.key, '--json']);
  assert.deepEqual([notRoot.code, notRoot.json.error.code], [3, 'FORBIDDEN']);
  assert.match(notRoot.json.error.message, new RegExp(`key ${idOf(w1)} `));
  assert.equal((await run(['trust', 'sign-root', '--key', b.key])).code, 0);
  const s2 = await run(['trust', 'sign-root', '--key', a.key]);
  assert.match(s2.stdout, /signing:\n  targets v2, expires .*\n    app\.web: 2 of 3: .*\n  changes from targets v1:\n    app\.web: delegated to 2 of 3 keys \(/);
  assert.match(s2.stdout, /published targets v2/);
  const t2 = fake.targets[1]!;
  published.verifyDelegate('targets', t2);
  const role = t2.signed.delegations!.roles!['app.web']!;
  assert.deepEqual([role.threshold, role.keyIDs, role.paths, role.terminating], [2, [idOf(w1), idOf(w2), idOf(w3)].sort(), ['web/*/*'], true]);
  assertNoPrivateKeySent();
});

test('trust export-root writes the published root, which verifies under its own keys, and never overwrites a file', async () => {
  const file = path.join(dir, 'root.json');
  const r = await run(['trust', 'export-root', '--out', file, '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.deepEqual([r.json.version, r.json.threshold], [1, 2]);
  const { Metadata, MetadataKind } = await import('@tufjs/models');
  const root = Metadata.fromJSON(MetadataKind.Root, JSON.parse(readFileSync(file, 'utf8')));
  root.verifyDelegate('root', root);
  const again = await run(['trust', 'export-root', '--out', file, '--json']);
  assert.deepEqual([again.code, again.json.error.code], [2, 'USAGE']);
});

test('trust status: versions, thresholds, expiries with days left, delegations, timestamp age and nodes; --json as the server answers', async () => {
  fake.extra = { timestamp: { version: 7, signedAt: new Date(Date.now() - 3 * 3_600_000).toISOString(), expires: new Date(Date.now() + 21 * 3_600_000).toISOString() }, nodes: { byScheme: { keys: 5, tuf: 2 }, metadataStale: 1 } };
  const human = await run(['trust', 'status']);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^root v1, expires \S+ \(in 36[45] days\)\n  root: 2 of 3: /);
  assert.match(human.stdout, /\ntargets v2, expires .*\n  app\.web: 2 of 3: /);
  assert.match(human.stdout, /\napp web: 2 of 3 keys \(.*\); no release signed under TUF yet\n/);
  assert.match(human.stdout, /\ntimestamp v7 signed 3\.0 h ago \(WARNING: over 2 h/);
  assert.match(human.stdout, /\nnodes by scheme: keys 5, tuf 2; metadata-stale: 1\n$/);
  const json = await run(['trust', 'status', '--json']);
  assert.equal(json.code, 0);
  assert.equal(json.json.root.metadata.signed.version, 1);
  assert.deepEqual(json.json.nodes, { byScheme: { keys: 5, tuf: 2 }, metadataStale: 1 });
  fake.extra = {};
});

test('trust rotate: root v2 with a lost key replaced, signed by both thresholds; a bad --new-online refused before asking the server', async () => {
  const bad = await run(['trust', 'rotate', '--keys', `${a.pub},${d.pub}`, '--threshold', '3', '--json']);
  assert.deepEqual([bad.code, bad.json.error.code], [2, 'USAGE']);
  const roles = await run(['trust', 'rotate', '--new-online', 'snapshot,nope', '--json']);
  assert.match(roles.json.error.message, /--new-online "nope" is not one of snapshot, timestamp, director/);
  const twice = await run(['trust', 'rotate', '--new-online', 'timestamp,timestamp', '--json']);
  assert.deepEqual([twice.code, twice.json.error.code], [2, 'USAGE']);
  assert.match(twice.json.error.message, /--new-online names a role twice/);
  assert.equal(fake.pending.root, null, 'nothing was put pending');
  // c is lost: the new root's keys are a, b, d.
  const r = await run(['trust', 'rotate', '--keys', `${a.pub},${b.pub},${d.pub}`, '--threshold', '2']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /signing it needs both thresholds: 2 of root v1's keys .*\n  and 2 of root v2's keys/);
  const next = fake.pending.root!;
  assert.equal(next.signed.version, 2);
  assert.deepEqual(next.signed.roles['root']!.keyIDs, [idOf(a), idOf(b), idOf(d)].sort());
  assert.deepEqual(next.signed.roles['timestamp']!.keyIDs, [tufKeyIdOf(fake.online.timestamp[0]!)], 'the timestamp key kept');
  assert.deepEqual(next.signed.roles['snapshot']!.keyIDs, [tufKeyIdOf(fake.online.snapshot[0]!)], 'the snapshot key kept');
  // d alone: 1 of 2 new, 0 of 2 previous. What changes is shown before signing.
  const shown = await run(['trust', 'sign-root', '--key', d.key]);
  assert.match(shown.stdout, new RegExp(`  changes from root v1:\\n    root: key added ${idOf(d)}\\n    root: key removed ${idOf(c)}\\n`));
  const byD = await run(['trust', 'sign-root', '--key', d.key, '--json']);
  assert.deepEqual(byD.json.signed[0].signatures.map((s: { signed: number; threshold: number }) => [s.signed, s.threshold]), [[1, 2], [0, 2]]);
  // c (lost from the new root, still a key of v1) counts toward the previous threshold only.
  const byC = await run(['trust', 'sign-root', '--key', c.key, '--json']);
  assert.deepEqual(byC.json.signed[0].signatures.map((s: { signed: number }) => s.signed), [1, 1]);
  const byA = await run(['trust', 'sign-root', '--key', a.key, '--json']);
  assert.equal(byA.json.signed[0].published, true);
  const [v1, v2] = fake.roots;
  v1!.verifyDelegate('root', v2!);
  v2!.verifyDelegate('root', v2!);
  assertNoPrivateKeySent();
});

test("against a status of summaries without the metadata (the server's branch as of this writing), the commands that sign refuse, naming what is missing; status shows the summaries", async () => {
  fake.summaryOnly = true;
  try {
    const human = await run(['trust', 'status']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^root v2, expires \S+ \(in 36[45] days\)\n  root: 2 of 3: /);
    assert.match(human.stdout, /\napp web: 2 of 3 keys \(.*\); no release signed under TUF yet\n/);
    assert.match(human.stdout, /\nnodes by scheme: keys 3, tuf 1, unreported 0; metadata-stale: 0\n$/);
    for (const args of [['trust', 'sign-root', '--key', a.key], ['trust', 'delegate', 'api', '--keys', `${w1.pub},${w2.pub}`], ['trust', 'rotate'], ['trust', 'init', '--keys', `${a.pub},${b.pub}`]]) {
      const before = fake.requests.length;
      const r = await run([...args, '--json']);
      if (args[1] === 'init') {
        assert.deepEqual([r.code, r.json.error.code], [2, 'USAGE']);
        assert.match(r.json.error.message, /already has root v2/);
        continue;
      }
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.equal(r.json.error.code, 'CONTROL_PLANE_REFUSED');
      assert.match(r.json.error.message, /describes root\.metadata, targets\.metadata without the metadata itself/);
      assert.deepEqual(fake.requests.slice(before).map((x) => x.method), ['GET'], 'nothing but the status was asked');
    }
  } finally {
    fake.summaryOnly = false;
  }
});

test('trust commands run through --server only', async () => {
  const { controlCli } = await import('../helpers/fleet.js');
  const r = await controlCli(path.join(dir, 'x.db'), ['trust', 'status', '--json']);
  assert.deepEqual([r.code, (r.json as { error: { code: string } }).error.code], [2, 'USAGE']);
  assert.match((r.json as { error: { message: string } }).error.message, /pass --server URL/);
});
