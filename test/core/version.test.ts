import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareVersions, isVersion } from '../../src/core/version.js';

test('versions compare by semver precedence', () => {
  const ordered = ['0.0.1', '0.1.0', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.0.1', '1.10.0', '2.0.0', '10.0.0', '99999999999999999999.0.0'];
  for (let i = 0; i < ordered.length; i++) {
    for (let j = 0; j < ordered.length; j++) {
      assert.equal(compareVersions(ordered[i]!, ordered[j]!), Math.sign(i - j), `${ordered[i]} vs ${ordered[j]}`);
    }
  }
});

test('only semver without build metadata is a version', () => {
  for (const v of ['1.0.0', '0.0.0', '1.2.3-rc.1', '1.2.3-x-y.z']) assert.ok(isVersion(v), v);
  for (const v of ['1.0', '01.0.0', '1.0.0+build', '../1.0.0', '1.0.0/x', 'v1.0.0', '', '1.0.0-', '1.0.0\n', '1.0.0-a/b'])
    assert.equal(isVersion(v), false, JSON.stringify(v));
});
