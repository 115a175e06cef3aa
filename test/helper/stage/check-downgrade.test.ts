import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StewardError } from '../../../src/core/errors.js';
import { DOMAINS, generateKeyPair, parsePrivateKey, parsePublicKey, signEnvelope, type Domain } from '../../../src/platform/keys.js';
import { checkDowngrade, type DowngradeExpectation } from '../../../src/helper/stage/verify-downgrade.js';

// The helper's check of a signed downgrade authorization (docs/design.md §18), one refusal per
// row: each is DOWNGRADE_REFUSED whose message says which check failed and what to run.

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const DAY = 86_400_000;
const webKey = generateKeyPair();
const apiKey = generateKeyPair();

function sign(payload: unknown, key = webKey, domain: Domain = DOMAINS.downgrade) {
  return signEnvelope(domain, payload, parsePrivateKey(key.privatePem));
}

const expect: DowngradeExpectation = {
  app: 'web',
  version: '1.1.0',
  below: '1.5.0',
  now: NOW,
  keys: new Map([[webKey.keyId, parsePublicKey(webKey.publicPem)]]),
  keysDir: '/etc/steward/trusted-keys/web',
};
const good = { app: 'web', version: '1.1.0', notAfter: NOW + 7 * DAY };

test('an authorization for exactly this app and version, signed by a key trusted for the app and not expired, is accepted with its key and expiry', () => {
  assert.deepEqual(checkDowngrade(sign(good), expect), { keyId: webKey.keyId, notAfter: good.notAfter, below: '1.5.0' });
});

const altered = (() => {
  const e = sign(good);
  const payload = Buffer.from(JSON.stringify({ ...good, version: '1.0.0' }).replace(/\s/g, '')).toString('base64');
  return { ...e, payload };
})();

const refusals: Array<{ name: string; envelope: ReturnType<typeof sign> | undefined; why: RegExp; remedy?: RegExp; x?: Partial<DowngradeExpectation> }> = [
  { name: 'no authorization came', envelope: undefined, why: /no downgrade authorization came with the request/ },
  { name: 'the signature does not verify (the payload was altered)', envelope: altered, why: /does not verify under steward-downgrade-v1 with key/ },
  { name: "it is signed by another app's key", envelope: sign(good, apiKey), why: new RegExp(`signed by key ${apiKey.keyId}, which is not trusted for app web`) },
  { name: 'it was signed under another domain (a release manifest signature by the right key)', envelope: sign(good, webKey, DOMAINS.manifest), why: /does not verify under steward-downgrade-v1/ },
  { name: 'it names another app (signed by the right key)', envelope: sign({ ...good, app: 'api' }), why: /is for app api, not web/ },
  { name: 'it names another, lower version', envelope: sign({ ...good, version: '1.0.0' }), why: /is for another version, 1\.0\.0: an authorization names exactly the version to install/ },
  { name: 'it names a newer version than the one asked for', envelope: sign({ ...good, version: '1.2.0' }), why: /is for a newer version, 1\.2\.0/ },
  { name: 'it expired', envelope: sign({ ...good, notAfter: NOW - 1 }), why: /expired at 2026-12-07T11:59:59\.999Z \(this host's clock says 2026-12-07T12:00:00\.000Z\)/, remedy: /sign a fresh one/ },
  { name: 'it expires exactly now', envelope: sign({ ...good, notAfter: NOW }), why: /expired at/ },
  { name: 'it holds further ahead than any authorization is signed for', envelope: sign({ ...good, notAfter: NOW + 31 * DAY }), why: /further ahead of this host's clock .* than the 30 days/, remedy: /check the clocks/ },
  { name: 'its payload is not {app, version, notAfter}', envelope: sign({ ...good, extra: true }), why: /is not one \{app, version, notAfter\}/ },
  { name: 'no key is trusted for the app', envelope: sign(good), why: /no keys are trusted for app web/, x: { keys: new Map() } },
];

for (const r of refusals) {
  test(`an authorization is refused DOWNGRADE_REFUSED when ${r.name}`, () => {
    assert.throws(
      () => checkDowngrade(r.envelope, { ...expect, ...r.x }),
      (err: unknown) => {
        assert.ok(err instanceof StewardError);
        assert.equal(err.code, 'DOWNGRADE_REFUSED');
        assert.match(err.message, /^web 1\.1\.0 is below 1\.5\.0, the highest version that was active here, and /);
        assert.match(err.message, r.why);
        assert.match(err.message, r.remedy ?? /steward-control release allow-downgrade web 1\.1\.0 --key <a release key of web>/);
        return true;
      },
    );
  });
}

test('a notAfter 30 days and 5 min ahead (the longest signed, plus the heartbeat skew allowed) is still accepted', () => {
  const edge = NOW + 30 * DAY + 5 * 60_000;
  assert.equal(checkDowngrade(sign({ ...good, notAfter: edge }), expect).notAfter, edge);
});
