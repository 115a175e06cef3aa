// The indexed manifest in the control plane's store (docs/design.md §20.2), on both backends: `release
// add` keeps it beside the plain manifest in the same row; a heartbeat's desired entry carries it
// only while it is the plain manifest plus an index (same key, bytes and expiry); refresh and
// --no-index keep the two in step; an older database is upgraded.
import { ANALYSIS_OFF } from '../../src/core/run-analysis.js';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { desiredFor } from '../../src/control/rollouts/desired.js';
import { runOperation } from '../../src/control/operations/operation.js';
import { localActor } from '../../src/control/audit/record-audit.js';
import { releaseList } from '../../src/control/operations/release-ops.js';
import { openStore } from '../../src/control/store/open-store.js';
import { MIGRATIONS, STORE_SCHEMA_VERSION } from '../../src/control/store/sqlite/schema.js';
import type { ControlStore, NewRun } from '../../src/control/store/store.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, generateKeyPair, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { releaseOf } from '../helpers/object-releases.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-indexed-manifest-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const payloadOf = (e: Envelope) => JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')) as Record<string, unknown>;

const run = (version: string): NewRun => ({
  app: 'web', version, startedAt: T0, heartbeatIntervalMs: 30_000, selector: '', canaries: 1, namedCanaries: [], canarySeed: 1, batch: '1', bakeMs: 0,
  maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', failuresCarried: 0, verdictTimeoutMs: 3_600_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null, analysis: ANALYSIS_OFF,
});

describeEachBackend((backend) => {
  let store: ControlStore;
  const clock = new FakeClock();
  const key = generateKeyPair();
  const artifactsDir = path.join(dir, `artifacts-${backend.name}`);
  const add = (version: string, o: { index?: boolean; expiresDays?: number } = {}) => {
    const file = path.join(dir, `${backend.name}-web-${version}.tgz`);
    writeFileSync(file, releaseOf(version, `${version}\n`));
    return addRelease(store, { app: 'web', version, file, url: null, baseUrl: 'https://cp.example', privateKeyPem: key.privatePem, expiresDays: o.expiresDays ?? 30, artifactsDir, index: o.index ?? true });
  };
  let n = 0;
  const desiredOf = async (version: string) => {
    n++;
    const runId = await store.write(async (tx) => {
      const active = await tx.runs.active('web');
      if (active) await tx.runs.end(active.id, 'stopped', undefined, T0);
      const id = await tx.runs.insert(run(version), [{ nodeId: 'n-a', lastHeartbeatAt: T0, listedApp: true }]);
      await tx.runs.insertIssued(id, { nodeId: 'n-a', attemptId: `r${n}.n-a`, issuedAt: T0, notAfter: null, batch: 0 });
      return id;
    });
    assert.ok(runId > 0);
    const [entry] = await store.read((tx) => desiredFor(tx, 'n-a', T0 + 1));
    assert.equal(entry?.version, version);
    return entry!;
  };

  before(async () => {
    store = await backend.open({ clock });
    const node = generateKeyPair();
    await store.write((tx) => tx.nodes.insert({ nodeId: 'n-a', hostname: 'a', nodePublicKey: node.publicPem, helperPublicKey: node.publicPem, enrolledAt: T0, labels: {} }));
  });
  after(() => store.close());

  test('release add keeps both manifests in one row, and the desired entry carries the indexed one beside the plain one', async () => {
    const r = await add('1.0.0');
    assert.ok(r.indexedManifest && r.index);
    assert.equal('index' in r.payload, false);
    assert.deepEqual(payloadOf(r.indexedManifest), { ...payloadOf(r.manifest), index: r.index });
    const row = await store.read((tx) => tx.releases.get('web', '1.0.0'));
    assert.deepEqual([row?.manifest, row?.indexedManifest], [r.manifest, r.indexedManifest]);
    const entry = await desiredOf('1.0.0');
    assert.deepEqual([entry.manifest, entry.indexedManifest], [r.manifest, r.indexedManifest]);
    const listed = await runOperation({ store, actor: localActor(), artifactsDir }, releaseList, { app: 'web' });
    assert.deepEqual(listed.releases.map((x) => [x.version, x.index?.url ?? null]), [['1.0.0', 'https://cp.example/v1/artifacts/web/1.0.0.index.json']]);
  });

  test('--no-index makes none, and a refresh without it drops the indexed manifest; a refresh with it replaces both together', async () => {
    const plain = await add('1.1.0', { index: false });
    assert.deepEqual([plain.indexedManifest, plain.index], [null, null]);
    assert.equal('indexedManifest' in (await desiredOf('1.1.0')), false);
    const withIndex = await add('1.1.0', { expiresDays: 40 });
    assert.equal(withIndex.change, 'refreshed');
    assert.equal((await desiredOf('1.1.0')).indexedManifest?.sig, withIndex.indexedManifest?.sig);
    const dropped = await add('1.1.0', { index: false, expiresDays: 50 });
    assert.equal(dropped.change, 'refreshed');
    assert.equal((await store.read((tx) => tx.releases.get('web', '1.1.0')))?.indexedManifest, null);
    assert.equal('indexedManifest' in (await desiredOf('1.1.0')), false);
  });

  test('an indexed manifest the row holds that is not the plain one plus an index is not sent (an older instance refreshed the plain one; garbage; another key; no index)', async () => {
    const r = await add('1.2.0');
    const row = (await store.read((tx) => tx.releases.get('web', '1.2.0')))!;
    const priv = parsePrivateKey(key.privatePem);
    const put = (indexedManifest: unknown, manifest = row.manifest) => store.write((tx) => tx.releases.upsert({ ...row, manifest, indexedManifest: indexedManifest as Envelope }));
    // A steward-control of schema 12 refreshes the plain manifest (a fresh expiry) and leaves the column.
    const fresher = signEnvelope(DOMAINS.manifest, { ...payloadOf(r.manifest), expires: (payloadOf(r.manifest).expires as number) + 1000 }, priv);
    await put(r.indexedManifest, fresher);
    assert.equal('indexedManifest' in (await desiredOf('1.2.0')), false, 'another expiry');
    const other = generateKeyPair();
    const cases: Array<[string, unknown]> = [
      ['garbage', { payload: '', sig: 'not base64', keyId: 'NOT-HEX' }],
      ['another key', signEnvelope(DOMAINS.manifest, payloadOf(r.indexedManifest!), parsePrivateKey(other.privatePem))],
      ['no index', signEnvelope(DOMAINS.manifest, payloadOf(r.manifest), priv)],
      ['other bytes', signEnvelope(DOMAINS.manifest, { ...payloadOf(r.indexedManifest!), size: 1 }, priv)],
    ];
    for (const [what, bad] of cases) {
      await put(bad);
      assert.equal('indexedManifest' in (await desiredOf('1.2.0')), false, what);
    }
    await put(r.indexedManifest);
    assert.deepEqual((await desiredOf('1.2.0')).indexedManifest, r.indexedManifest, 'the good one goes out again');
  });
});

test('a SQLite store of schema 12 (before indexed manifests) is upgraded when opened; its releases have none', async () => {
  const file = path.join(dir, 'old.db');
  const raw = new Database(file);
  for (const m of MIGRATIONS.slice(0, 12)) m(raw);
  raw.pragma('user_version = 12');
  raw.prepare(`INSERT INTO releases (app, version, manifest, integrity, size, expires, artifactPath, addedAt, keyId) VALUES ('web', '0.9.0', '{"payload":"e30=","sig":"x","keyId":"0123456789abcdef"}', 'sha512-x', 1, 1, NULL, 1, '0123456789abcdef')`).run();
  raw.close();
  const store = await openStore(file);
  try {
    assert.equal((await store.read((tx) => tx.releases.get('web', '0.9.0')))?.indexedManifest, null);
  } finally {
    await store.close();
  }
  const check = new Database(file, { readonly: true });
  assert.equal(check.pragma('user_version', { simple: true }), STORE_SCHEMA_VERSION);
  assert.ok(STORE_SCHEMA_VERSION >= 13);
  check.close();
});
