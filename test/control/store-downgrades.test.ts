// Signed downgrade authorizations in the control plane's store (docs/design.md §18), on both
// backends: `release allow-downgrade` checks and stores them, audited; one per app and version;
// a heartbeat's desired entry for that version carries it; and what the database holds goes out
// only when it has an envelope's shape (the host checks the signature, never the store's word).
import { ANALYSIS_OFF } from '../../src/core/run-analysis.js';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { localActor } from '../../src/control/audit/record-audit.js';
import { addRelease, releaseKeyOf } from '../../src/control/catalog/add-release.js';
import { signDowngrade } from '../../src/control/catalog/allow-downgrade.js';
import { runOperation } from '../../src/control/operations/operation.js';
import { releaseAllowDowngrade } from '../../src/control/operations/release-ops.js';
import { desiredFor } from '../../src/control/rollouts/desired.js';
import type { ControlStore, NewRun } from '../../src/control/store/store.js';
import { StewardError } from '../../src/core/errors.js';
import { DOMAINS, generateKeyPair, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend, describePostgres } from '../helpers/store-backends.js';
import { pgQuery } from '../helpers/postgres.js';
import Database from 'better-sqlite3';
import { migrateStore, openStore } from '../../src/control/store/open-store.js';
import { MIGRATIONS, STORE_SCHEMA_VERSION } from '../../src/control/store/sqlite/schema.js';

const DAY = 86_400_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-downgrades-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const run = (over: Partial<NewRun> = {}): NewRun => ({
  app: 'web', version: '1.1.0', startedAt: T0, heartbeatIntervalMs: 30_000, selector: '', canaries: 1, namedCanaries: [], canarySeed: 1, batch: '1', bakeMs: 0,
  maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', failuresCarried: 0, verdictTimeoutMs: 3_600_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null, analysis: ANALYSIS_OFF, ...over,
});

describeEachBackend((backend) => {
  let store: ControlStore;
  const clock = new FakeClock();
  const webKey = generateKeyPair();
  const apiKey = generateKeyPair();
  const allow = (app: string, version: string, key = webKey, o: { expiresDays?: number; now?: number } = {}) =>
    runOperation({ store, actor: localActor(), artifactsDir: path.join(dir, 'artifacts') }, releaseAllowDowngrade, { ...signDowngrade({ app, version, key: releaseKeyOf(key.privatePem), expiresDays: o.expiresDays ?? 7, now: o.now ?? T0 }) });
  const refusedWith = (code: string, pattern: RegExp) => (err: unknown) => err instanceof StewardError && err.code === code && pattern.test(err.message);

  before(async () => {
    store = await backend.open({ clock });
    for (const [app, version, key] of [['web', '1.1.0', webKey], ['web', '1.5.0', webKey], ['api', '2.0.0', apiKey]] as const) {
      const file = path.join(dir, `${backend.name}-${app}-${version}.tgz`);
      writeFileSync(file, `tarball of ${app} ${version}`);
      await addRelease(store, { app, version, file, url: `https://releases.invalid/${app}-${version}.tgz`, baseUrl: null, privateKeyPem: key.privatePem, expiresDays: 30, artifactsDir: path.join(dir, 'artifacts') });
    }
    const node = generateKeyPair();
    await store.write((tx) => tx.nodes.insert({ nodeId: 'n-a', hostname: 'a', nodePublicKey: node.publicPem, helperPublicKey: node.publicPem, enrolledAt: T0, labels: {} }));
  });
  after(() => store.close());

  test('release allow-downgrade stores the authorization signed by a release key of the app, and audits it', async () => {
    const r = await allow('web', '1.1.0');
    assert.deepEqual([r.app, r.version, r.keyId, r.notAfter, r.replaced], ['web', '1.1.0', webKey.keyId, T0 + 7 * DAY, false]);
    const row = await store.read((tx) => tx.releases.downgrade('web', '1.1.0'));
    assert.deepEqual(row, { app: 'web', version: '1.1.0', keyId: webKey.keyId, notAfter: T0 + 7 * DAY, authorization: r.authorization, addedAt: T0 });
    const payload = JSON.parse(Buffer.from(r.authorization.payload, 'base64').toString('utf8'));
    assert.deepEqual(payload, { app: 'web', notAfter: T0 + 7 * DAY, version: '1.1.0' });
    const audit = await store.read((tx) => tx.audit.page(0, 0, 100));
    const entry = audit.find((e) => e.action === 'release.allow-downgrade');
    assert.equal(entry?.target, 'web@1.1.0');
    assert.deepEqual(entry?.details, { keyId: webKey.keyId, notAfter: T0 + 7 * DAY });
  });

  test('a second authorization for the same version replaces the first (one per app and version)', async () => {
    clock.t = T0 + 1000;
    const r = await allow('web', '1.1.0', webKey, { expiresDays: 3, now: T0 + 1000 });
    assert.equal(r.replaced, true);
    const rows = await store.read((tx) => tx.releases.downgrades('web'));
    assert.deepEqual(rows.map((x) => [x.version, x.notAfter, x.addedAt]), [['1.1.0', T0 + 1000 + 3 * DAY, T0 + 1000]]);
    clock.t = T0;
  });

  test('an unknown app, a version not in the catalog, a key that is not a release key of the app, and an expired authorization are refused, and nothing is stored', async () => {
    await assert.rejects(allow('ghost', '1.0.0'), refusedWith('NOT_FOUND', /no app ghost in the catalog/));
    await assert.rejects(allow('web', '0.9.0'), refusedWith('NOT_FOUND', /web 0\.9\.0 is not in the catalog \(it has 1\.1\.0, 1\.5\.0\)/));
    await assert.rejects(allow('web', '1.5.0', apiKey), refusedWith('FORBIDDEN', new RegExp(`key ${apiKey.keyId} is not a release key of web`)));
    await assert.rejects(allow('web', '1.5.0', webKey, { now: T0 - 8 * DAY }), refusedWith('USAGE', /expired at/));
    await assert.rejects(allow('web', '1.5.0', webKey, { now: T0 + 10 * DAY, expiresDays: 30 }), refusedWith('USAGE', /further ahead than hosts accept/));
    // Names are checked before anything is signed or read.
    await assert.rejects(async () => allow('web', 'not-a-version'), refusedWith('USAGE', /versions are semver/));
    const good = signDowngrade({ app: 'web', version: '1.5.0', key: releaseKeyOf(webKey.privatePem), expiresDays: 7, now: T0 });
    await assert.rejects(runOperation({ store, actor: localActor(), artifactsDir: dir }, releaseAllowDowngrade, { ...good, version: '1.5' }), refusedWith('USAGE', /is not a version/));
    // Signed for one version, sent as another: the signature's payload decides.
    const signed = signDowngrade({ app: 'web', version: '1.5.0', key: releaseKeyOf(webKey.privatePem), expiresDays: 7, now: T0 });
    await assert.rejects(runOperation({ store, actor: localActor(), artifactsDir: dir }, releaseAllowDowngrade, { ...signed, version: '1.1.0' }), refusedWith('USAGE', /names web 1\.5\.0, not web 1\.1\.0/));
    // Another domain's signature (a manifest signature over the same payload) does not verify.
    const manifestSigned = { ...signed, authorization: signEnvelope(DOMAINS.manifest, JSON.parse(Buffer.from(signed.authorization.payload, 'base64').toString('utf8')), parsePrivateKey(webKey.privatePem)) };
    await assert.rejects(runOperation({ store, actor: localActor(), artifactsDir: dir }, releaseAllowDowngrade, { ...manifestSigned }), refusedWith('SIGNATURE_INVALID', /does not verify under steward-downgrade-v1/));
    assert.deepEqual((await store.read((tx) => tx.releases.downgrades())).map((r) => `${r.app}@${r.version}`), ['web@1.1.0']);
  });

  test("a heartbeat's desired entry for the version carries its authorization; another version's goes without; a row that is no envelope is not sent", async () => {
    const runId = await store.write((tx) => tx.runs.insert(run(), [{ nodeId: 'n-a', lastHeartbeatAt: T0, listedApp: true }]));
    await store.write((tx) => tx.runs.insertIssued(runId, { nodeId: 'n-a', attemptId: 'r1.n-a', issuedAt: T0, notAfter: null, batch: 0 }));
    const stored = await store.read((tx) => tx.releases.downgrade('web', '1.1.0'));
    const [entry] = await store.read((tx) => desiredFor(tx, 'n-a', T0 + 1));
    assert.deepEqual([entry?.app, entry?.version, entry?.downgrade], ['web', '1.1.0', stored?.authorization]);

    // Garbage written straight into the database goes out as no authorization at all.
    await store.write((tx) => tx.releases.putDowngrade({ app: 'web', version: '1.1.0', keyId: 'x', notAfter: 0, authorization: { payload: '', sig: 'not base64', keyId: 'NOT-HEX' }, addedAt: T0 }));
    const [bare] = await store.read((tx) => desiredFor(tx, 'n-a', T0 + 1));
    assert.equal(bare?.version, '1.1.0');
    assert.equal('downgrade' in (bare ?? {}), false);

    await store.write((tx) => tx.runs.end(runId, 'stopped', undefined, T0));
    const other = await store.write((tx) => tx.runs.insert(run({ version: '1.5.0' }), [{ nodeId: 'n-a', lastHeartbeatAt: T0, listedApp: true }]));
    await store.write((tx) => tx.runs.insertIssued(other, { nodeId: 'n-a', attemptId: 'r2.n-a', issuedAt: T0, notAfter: null, batch: 0 }));
    const [plain] = await store.read((tx) => desiredFor(tx, 'n-a', T0 + 1));
    assert.deepEqual([plain?.version, 'downgrade' in (plain ?? {})], ['1.5.0', false]);
  });
});

test('a SQLite store of schema 5 (before downgrade authorizations) is upgraded when opened, and keeps them', async () => {
  const file = path.join(dir, 'old.db');
  const raw = new Database(file);
  for (const m of MIGRATIONS.slice(0, 5)) m(raw);
  raw.pragma('user_version = 5');
  raw.close();
  const store = await openStore(file);
  try {
    const key = generateKeyPair();
    const authorization = signEnvelope(DOMAINS.downgrade, { app: 'web', version: '1.0.0', notAfter: T0 }, parsePrivateKey(key.privatePem));
    await store.write((tx) => tx.releases.putDowngrade({ app: 'web', version: '1.0.0', keyId: key.keyId, notAfter: T0, authorization, addedAt: T0 }));
    assert.deepEqual((await store.read((tx) => tx.releases.downgrade('web', '1.0.0')))?.authorization, authorization);
  } finally {
    await store.close();
  }
  const check = new Database(file, { readonly: true });
  assert.equal(check.pragma('user_version', { simple: true }), STORE_SCHEMA_VERSION);
  check.close();
});

describePostgres((backend) => {
  test('a PostgreSQL database of schema 5 is refused until `migrate` adds the downgrades table, an expansion that schema-5 instances go on using', async () => {
    const url = await backend.createDatabase();
    // Back to schema 5: without the downgrades table (6), the runs' maxFetchFailures (7), the
    // targets' tables (8), with one running run per app again (9), without the signal samples (10), the runs'
    // and targets' analysis and the judgements (11), and the hooks (12).
    await pgQuery(url, 'DROP TABLE downgrades, targets, run_owners, pins, signal_samples, run_judgements, hooks, hook_deliveries, hook_marks, trust_metadata, trust_keys, trust_pending, trust_pending_keys');
    await pgQuery(url, 'ALTER TABLE nodes DROP COLUMN trust, DROP COLUMN "trustAt"');
    await pgQuery(url, `DROP INDEX running_runs_by_app; CREATE UNIQUE INDEX one_running_run_per_app ON runs (app) WHERE status = 'running'`);
    await pgQuery(url, 'ALTER TABLE runs DROP COLUMN "maxFetchFailures", DROP COLUMN analysis');
    await pgQuery(url, 'ALTER TABLE releases DROP COLUMN "indexedManifest"');
    await pgQuery(url, 'DELETE FROM steward_migrations WHERE version >= 6');
    await assert.rejects(openStore(url), (err: unknown) => err instanceof StewardError && err.code === 'STATE_INVALID' && /schema version 5, older than/.test(err.message));
    assert.deepEqual((await migrateStore(url)).applied, [6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    assert.deepEqual((await pgQuery(url, `SELECT "compatibleFrom" FROM steward_migrations WHERE version = 6`)).rows, [{ compatibleFrom: 5 }]);
    const store = await openStore(url);
    try {
      assert.deepEqual(await store.read((tx) => tx.releases.downgrades()), []);
    } finally {
      await store.close();
    }
  });
});
