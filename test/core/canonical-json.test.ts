import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from '../../src/core/canonical-json.js';

test('canonical JSON sorts keys by code point at every level and has no whitespace', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [true, null], c: 'x' } }), '{"a":{"c":"x","d":[true,null]},"b":1}');
  // U+1F600 (astral) sorts after U+FFFD by code point, though its UTF-16 lead unit is smaller.
  assert.equal(canonicalJson({ '\u{1F600}': 1, '\uFFFD': 2 }), '{"\uFFFD":2,"\u{1F600}":1}');
});

test('canonical JSON refuses floats, unsafe integers and non-plain objects', () => {
  assert.throws(() => canonicalJson({ a: 1.5 }));
  assert.throws(() => canonicalJson({ a: 2 ** 60 }));
  assert.throws(() => canonicalJson({ a: new Date() }));
  assert.throws(() => canonicalJson({ a: () => 1 }));
});
