// The heartbeat envelope is checked by hand (heartbeatEnvelopeOf) on the hot path; the zod
// schema stays the rule. This holds the two to the same verdict on arbitrary JSON values and on
// near-misses of a valid envelope.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { heartbeatEnvelopeOf, heartbeatEnvelopeSchema } from '../../src/control/heartbeat/verify-heartbeat.js';
import { goldenInputs, recordGolden } from '../helpers/check-arbitraries.js';

const golden = { shape: 'heartbeat-envelope', from: 'heartbeatEnvelopeOf of src/control/heartbeat/verify-heartbeat.ts' };

function agree(value: unknown): void {
  const z = heartbeatEnvelopeSchema.safeParse(value);
  const hand = heartbeatEnvelopeOf(value);
  assert.equal(hand !== null, z.success, `zod ${z.success ? 'accepts' : 'refuses'} ${JSON.stringify(value)}`);
  if (z.success) assert.deepEqual(hand, z.data);
}

// A valid envelope with at most one thing changed, as JSON text (as a body arrives: a
// "__proto__" key is then an own key, the way JSON.parse makes it).
const hex16 = fc.stringMatching(/^[0-9a-f]{16}$/);
const valid = fc.record({ payload: fc.string({ minLength: 1, maxLength: 40 }), sig: fc.string({ minLength: 1, maxLength: 256 }), keyId: hex16 });
const value = fc.oneof(fc.jsonValue(), fc.string({ maxLength: 3 }), fc.string({ minLength: 255, maxLength: 257 }), fc.stringMatching(/^[0-9a-fA-F]{15,17}$/), hex16);
const nearMiss = fc.tuple(valid, fc.constantFrom('none', 'drop', 'set', 'extra', 'proto'), fc.constantFrom('payload', 'sig', 'keyId'), value, fc.string({ minLength: 1, maxLength: 8 }))
  .map(([env, how, key, v, name]) => {
    const o: Record<string, unknown> = { ...env };
    if (how === 'drop') delete o[key];
    if (how === 'set') o[key] = v;
    if (how === 'extra') o[['payload', 'sig', 'keyId'].includes(name) ? `${name}x` : name] = v;
    const text = JSON.stringify(o);
    return how === 'proto' ? `${text.slice(0, -1)},"__proto__":${JSON.stringify(v)}}` : text;
  });

test('heartbeatEnvelopeOf gives the verdict of heartbeatEnvelopeSchema on any JSON value', () => {
  recordGolden(golden, heartbeatEnvelopeOf, goldenInputs(fc.jsonValue(), 2000, heartbeatEnvelopeOf, heartbeatEnvelopeSchema));
  fc.assert(fc.property(fc.jsonValue(), agree), { numRuns: 2000 });
});

test('heartbeatEnvelopeOf gives the verdict of heartbeatEnvelopeSchema on near-misses of an envelope, parsed from JSON text', () => {
  // Through JSON text, as a body arrives: a "__proto__" key is then an own key, as JSON.parse makes it.
  const parsed = nearMiss.map((text): unknown => JSON.parse(text));
  const hand = ['{"payload":"a","sig":"b","keyId":"0123456789abcdef"}', '{"payload":"a","sig":"b","keyId":"0123456789abcdef","__proto__":{}}', '{"payload":"a","sig":"b","__proto__":"0123456789abcdef"}', '[]', 'null'];
  recordGolden(golden, heartbeatEnvelopeOf, [...goldenInputs(parsed, 3000, heartbeatEnvelopeOf, heartbeatEnvelopeSchema), ...hand.map((t): unknown => JSON.parse(t))]);
  fc.assert(fc.property(nearMiss, (text) => agree(JSON.parse(text))), { numRuns: 3000 });
  agree(JSON.parse('{"payload":"a","sig":"b","keyId":"0123456789abcdef"}'));
  agree(JSON.parse('{"payload":"a","sig":"b","keyId":"0123456789abcdef","__proto__":{}}'));
  agree(JSON.parse('{"payload":"a","sig":"b","__proto__":"0123456789abcdef"}'));
  agree([]);
  agree(null);
});
