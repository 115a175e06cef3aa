import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import type { DirectivePayload } from '../../src/core/trust/directive-schema.js';
import { newRoot } from '../../src/core/trust/build.js';
import { DIRECTOR_FIELD } from '../../src/core/trust/roles.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../../src/platform/keys.js';
import { directorKeysOf, openDirective, signDirective } from '../../src/platform/trust/directive.js';
import { tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { newKey } from '../helpers/tuf-repo.js';

const HOUR = 3_600_000;
const now = 1_800_000_000_000;
const director = newKey();
const root = newRoot({ rootKeys: [tufKeyOf(newKey())], snapshotKey: tufKeyOf(newKey()), timestampKey: tufKeyOf(newKey()), directorKey: tufKeyOf(director), expires: now + 1000 * HOUR });
const keys = directorKeysOf(root);
const payload: DirectivePayload = { nodeId: 'n-1', app: 'web', version: '1.2.0', attemptId: 'a-1', issuedAt: now, notAfter: now + HOUR };
const expect = { nodeId: 'n-1', app: 'web', version: '1.2.0', now: now + 1000 };

test("directorKeysOf maps the root's x-steward-director TUF keys to their docs/design.md §6 keyIds", () => {
  assert.deepEqual([...keys.keys()], [keyIdOf(director)]);
  assert.equal(keys.get(keyIdOf(director))!.export({ format: 'der', type: 'spki' }).toString('hex'), createPublicKey(director).export({ format: 'der', type: 'spki' }).toString('hex'));
  const none = newRoot({ rootKeys: [tufKeyOf(newKey())], snapshotKey: tufKeyOf(newKey()), timestampKey: tufKeyOf(newKey()), directorKey: tufKeyOf(newKey()), expires: now });
  delete none.signed.unrecognizedFields[DIRECTOR_FIELD];
  assert.equal(directorKeysOf(none).size, 0);
  none.signed.unrecognizedFields[DIRECTOR_FIELD] = { keyids: ['ff'], threshold: 1 };
  assert.throws(() => directorKeysOf(none), /does not hold/);
  none.signed.unrecognizedFields[DIRECTOR_FIELD] = { keyids: [], threshold: 2 };
  assert.throws(() => directorKeysOf(none), /threshold: 1/);
});

test('a directive opens for its node, app and version while it holds', () => {
  const got = openDirective(signDirective(payload, director), keys, expect);
  assert.deepEqual(got, { ok: true, directive: payload, keyId: keyIdOf(director) });
});

test('each refusal of a directive names its check', () => {
  const env = signDirective(payload, director);
  const reason = (e: typeof env, x = expect, k = keys) => {
    const r = openDirective(e, k, x);
    return r.ok ? 'ok' : r.reason;
  };
  assert.equal(reason(env, { ...expect, nodeId: 'n-2' }), 'wrong-node');
  assert.equal(reason(env, { ...expect, app: 'api' }), 'wrong-app');
  assert.equal(reason(env, { ...expect, version: '1.1.0' }), 'wrong-version');
  assert.equal(reason(env, { ...expect, now: now + HOUR }), 'expired');
  assert.equal(reason(env, { ...expect, now: now - 6 * 60_000 }), 'not-yet-valid');
  assert.equal(reason(env, { ...expect, now: now - 4 * 60_000 }), 'ok', 'within the clock difference a heartbeat is allowed');
  // Signed as-is (not through signDirective, which refuses them): too long, and not a directive.
  assert.equal(reason(signEnvelope(DOMAINS.directive, { ...payload, notAfter: now + 24 * HOUR + 1 }, director)), 'too-long');
  assert.equal(reason(signEnvelope(DOMAINS.directive, { ...payload, extra: 1 }, director)), 'malformed');
  // Another key, another domain, other bytes.
  assert.equal(reason(signDirective(payload, newKey())), 'unknown-key');
  assert.equal(reason(signEnvelope(DOMAINS.downgrade, payload, director)), 'bad-signature');
  const other = canonicalBytes({ ...payload, version: '1.3.0' }).toString('base64');
  assert.equal(reason({ ...env, payload: other }), 'bad-signature');
  assert.equal(reason({ ...env, sig: env.sig.slice(1) }), 'bad-encoding');
  assert.throws(() => signDirective({ ...payload, notAfter: now + 25 * HOUR }, director), /24 hours/);
  assert.throws(() => signDirective({ ...payload, notAfter: now }, director), /24 hours/);
});
