import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Readable } from 'node:stream';
import { StewardError } from '../../src/core/errors.js';
import { versionDir } from '../../src/core/paths.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, parsePrivateKey, signEnvelope, type Domain } from '../../src/platform/keys.js';
import { callHelper } from '../../src/protocol/client.js';
import { helperClient } from '../../src/protocol/helper-client.js';
import { appRelease } from '../fixtures/app-releases.js';
import { helperStatus } from '../helpers/helper-status.js';
import { makeReleaseKey, manifestFor, processApp, type ReleaseKey } from '../helpers/host.js';
import { useHost } from '../helpers/host-fixture.js';
import { waitUntil } from '../helpers/fleet.js';
import { receiptOf, signedHost } from '../helpers/helper-sock-attempts.js';

// A rollback attack through the fleet (docs/design.md §18): whoever writes the control plane's
// database can put an older, vulnerable version of an app in a node's desired entry. The helper
// goes below the highest version that was active only with a downgrade authorization signed by a
// key trusted for that app, for exactly that version, not expired. Here the requests come over
// helper.sock as the agent sends them; every forged, stale or misdirected authorization is
// refused with a `refused` receipt, and nothing on the host changes.

const DAY = 86_400_000;

function authorization(key: ReleaseKey, payload: unknown, domain: Domain = DOMAINS.downgrade): Envelope {
  return signEnvelope(domain, payload, parsePrivateKey(key.privatePem));
}

test('an update below the highest active version goes through only with a valid downgrade authorization, which lowers the floor to exactly that version', { timeout: 120_000 }, async (t) => {
  const s = await signedHost(t);
  const helper = helperClient((request, opts) => callHelper(s.host.paths.helperSock, request, opts));
  const tgz = Object.fromEntries(['1.0.0', '1.1.0', '1.5.0'].map((v) => [v, appRelease('web', v, 0, { probe: 'none', stableMs: 100 })]));
  const update = (version: string, attemptId: string, downgrade?: Envelope) => {
    const bytes = tgz[version] as Buffer;
    return helper.update(
      { app: 'web', version, manifest: s.key.sign(manifestFor('web', version, bytes)), attemptId, upload: bytes.length, by: 'steward-agent', ...(downgrade ? { downgrade } : {}) },
      { upload: { size: bytes.length, stream: Readable.from([bytes]) } },
    );
  };
  const web = async () => (await helperStatus(s.host.root)).apps.find((a: { name: string }) => a.name === 'web');

  const first = await update('1.5.0', 'run-1.web.1');
  assert.equal('outcome' in first && first.outcome, 'active', JSON.stringify(first));
  assert.equal((await web()).highestActive, '1.5.0');

  const apiKey = makeReleaseKey(s.host, ['api']);
  const good = { app: 'web', version: '1.1.0', notAfter: Date.now() + 7 * DAY };
  const forged: Array<[string, Envelope | undefined, RegExp]> = [
    ['none at all', undefined, /no downgrade authorization came with the request/],
    ["signed by another app's key", authorization(apiKey, good), new RegExp(`signed by key ${apiKey.keyId}, which is not trusted for app web`)],
    ['expired', authorization(s.key, { ...good, notAfter: Date.now() - 1000 }), /expired at/],
    ['for another version', authorization(s.key, { ...good, version: '1.0.0' }), /is for another version, 1\.0\.0/],
    ['for a newer version than asked', authorization(s.key, { ...good, version: '1.2.0' }), /is for a newer version, 1\.2\.0/],
    ['for another app', authorization(s.key, { ...good, app: 'api' }), /is for app api, not web/],
    ['signed under another domain', authorization(s.key, good, DOMAINS.manifest), /does not verify under steward-downgrade-v1/],
  ];
  let n = 0;
  for (const [what, envelope, why] of forged) {
    const attemptId = `run-2.web.${++n}`;
    await assert.rejects(update('1.1.0', attemptId, envelope), (err: unknown) => { assert.ok(err instanceof StewardError, String(err)); assert.equal(err.code, 'DOWNGRADE_REFUSED', `${what}: ${err.message}`); assert.match(err.message, why, what); return true; });
    const receipt = await receiptOf(s, attemptId);
    assert.deepEqual([receipt.outcome, receipt.reason.code], ['refused', 'DOWNGRADE_REFUSED'], what);
    assert.match(receipt.reason.message, /steward-control release allow-downgrade web 1\.1\.0/, `${what}: the receipt names the command`);
    const st = await web();
    assert.deepEqual([st.current, st.highestActive], ['1.5.0', '1.5.0'], `${what}: nothing changed`);
    assert.equal(existsSync(versionDir(s.host.paths, 'web', '1.1.0')), false, `${what}: nothing was staged`);
  }

  // The real one: 1.1.0 becomes active, the floor is now 1.1.0, and the receipt names the key.
  const back = await update('1.1.0', 'run-3.web.1', authorization(s.key, good));
  assert.equal('outcome' in back && back.outcome, 'active', JSON.stringify(back));
  const receipt = await receiptOf(s, 'run-3.web.1');
  assert.deepEqual([receipt.outcome, receipt.fromVersion, receipt.targetVersion, receipt.reason.code], ['active', '1.5.0', '1.1.0', 'DOWNGRADE_AUTHORIZED']);
  assert.match(receipt.reason.message, new RegExp(`went below 1\\.5\\.0, the highest version that was active here, by the downgrade authorization of key ${s.key.keyId}`));
  const st = await web();
  assert.deepEqual([st.current, st.previous, st.highestActive], ['1.1.0', '1.5.0', '1.1.0']);

  // The authorization is for 1.1.0 only: it takes nobody below it, and is no floor for going up.
  await assert.rejects(update('1.0.0', 'run-4.web.1', authorization(s.key, good)), (err: unknown) => err instanceof StewardError && err.code === 'DOWNGRADE_REFUSED' && /below 1\.1\.0.*is for a newer version, 1\.1\.0/.test(err.message));
  const up = await update('1.5.0', 'run-5.web.1');
  assert.equal('outcome' in up && up.outcome, 'active', JSON.stringify(up));
  assert.equal((await web()).highestActive, '1.5.0');
});

test('an authorized downgrade that the watch window rolls back leaves the floor at the version it went back to', { timeout: 120_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000, restart: { baseMs: 200, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 } }) } });
  const key = makeReleaseKey(host, ['web']);
  await host.startHelper();
  const helper = helperClient((request, opts) => callHelper(host.paths.helperSock, request, opts));
  const update = (version: string, tgz: Buffer, attemptId: string, extra: Record<string, unknown> = {}) =>
    helper.update(
      { app: 'web', version, manifest: key.sign(manifestFor('web', version, tgz)), attemptId, upload: tgz.length, by: 'steward-agent', ...extra },
      { upload: { size: tgz.length, stream: Readable.from([tgz]) } },
    );
  const up = await update('1.5.0', appRelease('web', '1.5.0', 0, { probe: 'none', stableMs: 100 }), 'run-1.web.1');
  assert.equal('outcome' in up && up.outcome, 'active');
  // 1.1.0 passes its activation (alive 5 s, without a health check), then exits 5.5 s after each
  // start: the window (the run's bake, 60 s) rolls it back at its third exit.
  const bad = appRelease('web', '1.1.0', 0, { probe: 'none', crashAfterMs: 5500 });
  const down = await update('1.1.0', bad, 'run-2.web.1', { watchMs: 60_000, downgrade: authorization(key, { app: 'web', version: '1.1.0', notAfter: Date.now() + DAY }) });
  assert.equal('outcome' in down && down.outcome, 'active');
  const web = async () => (await helperStatus(host.root)).apps.find((a: { name: string }) => a.name === 'web');
  assert.equal((await web()).highestActive, '1.1.0', 'the floor went down with the authorized activation');
  const back = await waitUntil('the watch window to roll 1.1.0 back', 60_000, async () => {
    const w = await web();
    return w.current === '1.5.0' && w.lastAttempt?.outcome === 'rolled-back' ? w : undefined;
  });
  assert.equal(back.lastAttempt.reason.code, 'UNHEALTHY_AFTER_ACTIVATION');
  assert.equal(back.highestActive, '1.5.0', 'back on 1.5.0, the floor is 1.5.0 again');
});
