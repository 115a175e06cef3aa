import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matchesSelector, parseSelector } from '../../src/core/selector.js';

const env = { env: 'prod', tier: 'web', region: 'eu', 'claimed.env': 'staging' };
const bare = { tier: 'db' };

// [selector, matches env, matches bare]
const cases: Array<[string, boolean, boolean]> = [
  ['', true, true],
  ['env=prod', true, false],
  ['env==prod', true, false],
  ['env = prod', true, false],
  ['env!=prod', false, true], // as Kubernetes: != holds for a node without the key
  ['env!=staging', true, true],
  ['region in (eu,us)', true, false],
  ['region in ( us , ap )', false, false],
  ['region notin (us)', true, true], // notin holds without the key too
  ['region notin (eu,us)', false, true],
  ['env', true, false],
  ['!env', false, true],
  ['! env', false, true],
  ['env=prod,tier=web', true, false],
  ['env=prod, tier in (web,api), !legacy', true, false],
  ['tier=db,!env', false, true],
  ['env=', false, false],
  ['claimed.env=staging', true, false], // a claimed key selects only when named
  ['env=staging', false, false],
];

for (const [text, a, b] of cases) {
  test(`selector ${JSON.stringify(text)} holds for the labelled node: ${a}, for the bare one: ${b}`, () => {
    const sel = parseSelector(text);
    assert.equal(matchesSelector(sel, env), a);
    assert.equal(matchesSelector(sel, bare), b);
  });
}

test('bad selectors are usage errors that say what is wrong', () => {
  for (const text of ['env=prod,', ',', 'Env=prod', 'env=pr od', 'region in ()', 'region in (eu', 'region in eu)', 'env=(a)', 'a in (b,c', '!', 'env=prod extra', 'x'.repeat(5000), 'region in (eu,(us))', 'env=prod!']) {
    assert.throws(() => parseSelector(text), (err: Error & { code?: string }) => err.code === 'USAGE' && /selector/.test(err.message), text);
  }
});
