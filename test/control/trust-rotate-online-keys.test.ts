// New online keys by a root rotation (docs/trust.md, "Recovering from a compromised control plane";
// docs/design.md §21.4), on both backends, through the real CLI against the real admin routes, with
// a second instance on the same database: `trust rotate --new-online timestamp,snapshot,director`
// makes the keys pending (the same ones when asked again); until the root naming them is
// published the old keys still sign everything; the publication switches both instances to the
// new keys in its transaction (a timestamp, snapshot and directive verify under the new root's
// keys only, never under the old), deletes the old private keys, and a host's tuf-js on root 1
// follows to root 2 and refuses what the stolen keys sign. An abandoned rotation drops its keys;
// two instances adding the last signature at once switch the keys once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type http from 'node:http';
import { MetadataKind, type Metadata, type Root } from '@tufjs/models';
import { DESIRED_FIELDS_HEADER } from '../../src/core/control-api.js';
import { metadataBytes, newTimestamp, rotateRoot } from '../../src/core/trust/build.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { trustBundle } from '../../src/control/trust/bundle-route.js';
import { readTrustState, withTrust } from '../../src/control/trust/heartbeat-trust.js';
import { addSignatures, currentRoot, onlineKeys, parseMetadata, putPending, resignIfDue, rotateOnlineKeys, type OnlineKeys } from '../../src/control/trust/repository.js';
import { directorKeysOf, openDirective } from '../../src/platform/trust/directive.js';
import { signMetadata } from '../../src/platform/trust/tuf-keys.js';
import { TIMESTAMP_RESIGN_MS } from '../../src/core/trust/roles.js';
import { localActor } from '../../src/control/audit/record-audit.js';
import { runOperation } from '../../src/control/operations/operation.js';
import { operatorAdd } from '../../src/control/operations/operator-ops.js';
import type { OperatorRole } from '../../src/control/store/store.js';
import { adminCall } from '../helpers/admin-client.js';
import { FakeClock, startControlOn, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { bytesOf, filesOf, seedRepository, signaturesOf, signedBy, updaterOver, type SeededRepository } from '../helpers/trust-admin.js';
import { controlAt, type KeyFiles } from '../helpers/trust-cli.js';

const ROLES = ['snapshot', 'timestamp', 'director'] as const;

describeEachBackend((backend) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-trust-rotate-online-'));
  const clock = new FakeClock(Date.now());
  let c: Control<ControlStore>;
  let other: ControlStore;
  let admin: string;
  let viewer: string;
  let repo: SeededRepository;
  let keyFiles: KeyFiles[];
  let stolen: OnlineKeys;
  let root2: Metadata<Root>;
  const run = (args: string[]) => controlAt(c.server.url, args, admin);
  const status = async () => (await adminCall(c.server.url, '/v1/admin/trust', { token: viewer })).body;
  const postOnline = (json: unknown, token = admin) => adminCall(c.server.url, '/v1/admin/trust/online-keys', { method: 'POST', token, json });

  before(async () => {
    c = await startControlOn(backend, { admin: {}, clock });
    // The server's first look for a timestamp to re-sign is a write: let it end before a second
    // SQLite connection of this process opens (it would wait on the lock synchronously).
    await c.store.write(async () => undefined);
    // A second instance on the same database: it must follow the switch, never sign with a key it read before.
    other = await openStore(c.dbFile, { clock });
    const addOperator = async (name: string, role: OperatorRole) => ((await runOperation({ store: c.store, actor: localActor(), artifactsDir: '' }, operatorAdd, { name, role })) as { token: string }).token;
    admin = await addOperator('adam', 'admin');
    viewer = await addOperator('vera', 'viewer');
    repo = await seedRepository(c.store, clock.now());
    // The root key holders' key files, on their machines.
    keyFiles = repo.rootKeys.map((k, i) => {
      const key = path.join(dir, `root-${i}.key`);
      writeFileSync(key, k.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
      return { name: `root-${i}`, key, pub: key.replace(/\.key$/, '.pub') };
    });
    // The attacker's copy of the online private keys, read out of the database.
    stolen = (await c.store.read((tx) => onlineKeys(tx)))!;
  });
  after(async () => {
    await other.close();
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // A heartbeat answer with one desired entry for web 1.0.0, as the server makes it, from `store`:
  // the directive it carries.
  const directiveFrom = async (store: ControlStore) => {
    const req = { headers: { [DESIRED_FIELDS_HEADER]: 'trust,directive' } } as unknown as http.IncomingMessage;
    const trust = await store.read((tx) => readTrustState(tx));
    const answer = await withTrust(req, { status: 200, body: { desired: [{ app: 'web', version: '1.0.0', attemptId: 'run-1.web.1' }] }, trust }, store, 'n-1');
    const d = (answer.body as { desired: Array<{ directive: Parameters<typeof openDirective>[0] }> }).desired[0]!.directive;
    assert.ok(d, 'a directive');
    return d;
  };
  const opens = (directive: Parameters<typeof openDirective>[0], root: Metadata<Root>) => openDirective(directive, directorKeysOf(root), { nodeId: 'n-1', app: 'web', version: '1.0.0', now: clock.now() });
  const latest = async (role: 'timestamp' | 'snapshot') => {
    const row = (await c.store.read((tx) => tx.trust.latest(role)))!;
    return role === 'timestamp' ? parseMetadata(MetadataKind.Timestamp, row.bytes) : parseMetadata(MetadataKind.Snapshot, row.bytes);
  };
  const verifies = (root: Metadata<Root>, role: 'timestamp' | 'snapshot', md: Awaited<ReturnType<typeof latest>>) => {
    try {
      root.verifyDelegate(role, md);
      return true;
    } catch {
      return false;
    }
  };
  const privateKeysInDb = async () => {
    const rows = await c.store.read(async (tx) => [...(await tx.trust.keys()), ...(await tx.trust.pendingKeys())]);
    return rows.map((r) => r.privateKey);
  };

  test('trust rotate --new-online: new keys pending, the same ones when asked again; bad requests refused with their reason', async () => {
    const r = await run(['trust', 'rotate', '--new-online', 'timestamp,snapshot,director', '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const newIds = r.json.newOnline as Record<string, string>;
    assert.deepEqual(Object.keys(newIds).sort(), [...ROLES].sort());
    for (const role of ROLES) assert.notEqual(newIds[role], stolen[role].tuf.keyID, `a new ${role} key`);
    const s = await status();
    assert.deepEqual(s.pendingOnlineKeys, newIds);
    assert.deepEqual(s.onlineKeys, { snapshot: stolen.snapshot.tuf.keyID, timestamp: stolen.timestamp.tuf.keyID, director: stolen.director.tuf.keyID }, 'the old keys are still in use');
    assert.equal(s.pending.root.version, 2);
    const human = await run(['trust', 'status']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`\\nonline keys in use: snapshot ${stolen.snapshot.tuf.keyID.slice(0, 16)}, timestamp ${stolen.timestamp.tuf.keyID.slice(0, 16)}, director ${stolen.director.tuf.keyID.slice(0, 16)}\\nNEW online keys pending \\(in use once the root naming them is published\\): director ${newIds['director']!.slice(0, 16)}, snapshot ${newIds['snapshot']!.slice(0, 16)}, timestamp ${newIds['timestamp']!.slice(0, 16)}\\n`));
    const pendingRoot = parseMetadata(MetadataKind.Root, JSON.stringify(s.pending.root.metadata));
    assert.deepEqual([pendingRoot.signed.roles['timestamp']!.keyIDs, pendingRoot.signed.roles['snapshot']!.keyIDs, [...directorKeysOf(pendingRoot.signed).keys()].length], [[newIds['timestamp']], [newIds['snapshot']], 1]);
    // The same request again: the same keys, no second set.
    const again = await postOnline({ rotate: ['timestamp', 'snapshot', 'director'] });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(Object.fromEntries(ROLES.map((role) => [role, again.body.onlineKeys[role].keyid])), newIds);
    assert.equal((await c.store.read((tx) => tx.trust.pendingKeys())).length, 3);
    // A different rotation while the pending root names these: refused, nothing dropped.
    const other1 = await postOnline({ rotate: ['timestamp'] });
    assert.deepEqual([other1.status, other1.body.error.code], [409, 'STATE_INVALID']);
    assert.match(other1.body.error.message, /a rotation is pending: root v2 names new online keys for snapshot, director/);
    const cli = await run(['trust', 'rotate', '--new-online', 'timestamp', '--json']);
    assert.deepEqual([cli.code, cli.json.error.code], [2, 'USAGE']);
    assert.match(cli.json.error.message, /root v2 is already pending/);
    for (const body of [{ rotate: ['root'] }, { rotate: [] }, { rotate: ['timestamp', 'timestamp'] }, { rotate: ['timestamp'], extra: 1 }, { rotate: 'timestamp' }]) {
      const bad = await postOnline(body);
      assert.deepEqual([bad.status, bad.body.error.code], [400, 'USAGE'], JSON.stringify(body));
    }
    const unknown = await run(['trust', 'rotate', '--new-online', 'root', '--json']);
    assert.match(unknown.json.error.message, /--new-online "root" is not one of snapshot, timestamp, director/);
    // A viewer may not make keys.
    assert.equal((await postOnline({ rotate: ['timestamp'] }, viewer)).status, 403);
    assert.equal((await c.store.read((tx) => tx.trust.pendingKeys())).length, 3);
  });

  test('before the thresholds are met the old keys sign the timestamp, the snapshot and directives', async () => {
    const one = await run(['trust', 'sign-root', '--key', keyFiles[0]!.key, '--json']);
    assert.equal(one.code, 0, one.stdout + one.stderr);
    assert.equal(one.json.signed[0].published, false);
    clock.advance(TIMESTAMP_RESIGN_MS);
    assert.notEqual(await other.write(resignIfDue), null, 'the other instance re-signs');
    assert.ok(verifies(repo.root, 'timestamp', await latest('timestamp')), 'with the old timestamp key');
    assert.ok(verifies(repo.root, 'snapshot', await latest('snapshot')));
    // Each instance reads the director key once and caches it.
    for (const store of [c.store, other]) assert.equal(opens(await directiveFrom(store), repo.root).ok, true);
  });

  test('the publication switches to the new keys in its transaction: the old private keys are deleted, the old keys verify nothing new, both instances sign with the new ones', async () => {
    const two = await run(['trust', 'sign-root', '--key', keyFiles[1]!.key, '--json']);
    assert.equal(two.code, 0, two.stdout + two.stderr);
    assert.equal(two.json.signed[0].published, true);
    assert.deepEqual(two.json.signed[0].switchedOnlineKeys, ['snapshot', 'timestamp', 'director']);
    const s = await status();
    assert.equal(s.root.version, 2);
    assert.equal(s.pendingOnlineKeys, null);
    root2 = parseMetadata(MetadataKind.Root, JSON.stringify(s.root.metadata));
    assert.equal(s.onlineKeys.timestamp, root2.signed.roles['timestamp']!.keyIDs[0]);
    // The old private keys are gone from the database; the new ones are the only ones there.
    const pems = await privateKeysInDb();
    assert.equal(pems.length, 3);
    for (const role of ROLES) assert.ok(!pems.includes(stolen[role].key.export({ format: 'pem', type: 'pkcs8' }).toString()), `the old ${role} private key is deleted`);
    // The publication signed a new snapshot and timestamp: the new root's keys, not the old.
    for (const role of ['timestamp', 'snapshot'] as const) {
      const md = await latest(role);
      assert.ok(verifies(root2, role, md), `the ${role} verifies under root 2`);
      assert.ok(!verifies(repo.root, role, md), `the ${role} does not verify under root 1's ${role} key`);
    }
    // Directives: both instances (each had the old director key cached) sign with the new key only.
    for (const store of [c.store, other]) {
      const d = await directiveFrom(store);
      assert.equal(opens(d, root2).ok, true);
      assert.deepEqual(opens(d, repo.root), { ok: false, reason: 'unknown-key', message: `key ${d.keyId} is not a director key of the root` });
    }
    // The other instance's next re-signing: the new timestamp key.
    clock.advance(TIMESTAMP_RESIGN_MS);
    assert.notEqual(await other.write(resignIfDue), null);
    const ts = await latest('timestamp');
    assert.ok(verifies(root2, 'timestamp', ts) && !verifies(repo.root, 'timestamp', ts));
  });

  test("a host's tuf-js on root 1 follows to root 2, then refuses a timestamp the stolen key signs", async () => {
    const bundle = filesOf((await c.store.read((tx) => trustBundle(tx, 1)))!);
    const updater = updaterOver(bytesOf(repo.root), bundle);
    await updater.refresh();
    assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));
    // The thief's timestamp: the next version, naming the current snapshot, signed with the old key.
    const ts = await latest('timestamp');
    const snapRow = (await c.store.read((tx) => tx.trust.latest('snapshot')))!;
    const forged = newTimestamp(Buffer.from(snapRow.bytes), snapRow.version, ts.signed.version + 1, clock.now());
    signMetadata(forged, stolen.timestamp.key);
    const files = new Map(bundle);
    files.set('timestamp.json', metadataBytes(forged));
    await assert.rejects(updaterOver(bytesOf(root2), files).refresh(), /timestamp was signed by 0\/1 keys/);
  });

  test('an abandoned rotation drops its keys: replaced by a root without them, or a root published that does not name them', async () => {
    const before = (await status()).onlineKeys;
    const r = await run(['trust', 'rotate', '--new-online', 'director']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const pendingDirector = (await status()).pendingOnlineKeys;
    assert.deepEqual(Object.keys(pendingDirector), ['director']);
    assert.match(r.stdout, new RegExp(`\\nnew online keys \\(made and held by the control plane, pending\\): director ${pendingDirector.director}\\n  the control plane goes on signing with the current ones until root v3 is published`));
    // Replaced (--replace) by a root that names no new key: the pending director key is dropped.
    const replaced = await run(['trust', 'rotate', '--replace', '--json']);
    assert.equal(replaced.code, 0, replaced.stdout + replaced.stderr);
    assert.equal((await status()).pendingOnlineKeys, null);
    assert.deepEqual(await c.store.read((tx) => tx.trust.pendingKeys()), []);
    // Keys asked for beside a pending root that does not name them, then that root published: dropped.
    const stray = await postOnline({ rotate: ['snapshot'] });
    assert.equal(stray.status, 200, JSON.stringify(stray.body));
    assert.deepEqual(Object.keys((await status()).pendingOnlineKeys), ['snapshot']);
    for (const k of keyFiles.slice(0, 2)) {
      const signed = await run(['trust', 'sign-root', '--key', k.key, '--json']);
      assert.equal(signed.code, 0, signed.stdout + signed.stderr);
    }
    const s = await status();
    assert.equal(s.root.version, 3);
    assert.equal(s.pendingOnlineKeys, null);
    assert.deepEqual(s.onlineKeys, before, 'the keys in use stay');
    assert.equal((await privateKeysInDb()).length, 3);
  });

  test('two instances adding the last signature at once: one publishes and switches, the other is refused; the keys switch once', async () => {
    const made = await c.store.write((tx) => rotateOnlineKeys(tx, ['timestamp', 'director'], false));
    const current = (await c.store.read((tx) => currentRoot(tx)))!.md;
    const next = rotateRoot(current, { timestampKey: made.keys.timestamp.tuf, directorKey: made.keys.director.tuf, expires: clock.now() + 365 * 86_400_000 });
    await c.store.write((tx) => putPending(tx, 'root', bytesOf(signedBy(next, repo.rootKeys.slice(0, 1))).toString('utf8'), 'test'));
    const last = signaturesOf(next, [repo.rootKeys[1]!]);
    const sign = (store: ControlStore) => store.write((tx) => addSignatures(tx, 'root', last, 'test'));
    // Why one after the other on SQLite: one serving instance (see trust-resign.test.ts).
    const settled = backend.name === 'postgres' ? await Promise.allSettled([sign(c.store), sign(other)]) : [await Promise.allSettled([sign(c.store)]), await Promise.allSettled([sign(other)])].flat();
    const won = settled.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1, JSON.stringify(settled));
    assert.deepEqual((won[0] as PromiseFulfilledResult<{ switched: string[] }>).value.switched, ['timestamp', 'director']);
    for (const r of settled.filter((x) => x.status === 'rejected')) assert.ok(['STATE_INVALID', 'NOT_FOUND'].includes((r as PromiseRejectedResult).reason?.code), String((r as PromiseRejectedResult).reason));
    const keys = (await c.store.read((tx) => onlineKeys(tx)))!;
    assert.deepEqual([keys.timestamp.tuf.keyID, keys.director.tuf.keyID], [made.keys.timestamp.tuf.keyID, made.keys.director.tuf.keyID]);
    assert.deepEqual(await c.store.read((tx) => tx.trust.pendingKeys()), []);
    assert.equal((await privateKeysInDb()).length, 3);
    // The other instance signs the next directive with the new director key.
    assert.equal(opens(await directiveFrom(other), (await c.store.read((tx) => currentRoot(tx)))!.md).ok, true);
  });
});
