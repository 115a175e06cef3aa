import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appOfRole, delegatedRoleName, downgradeTargetPath, indexTargetPath, manifestTargetPath, tufTime } from '../../src/core/trust/roles.js';

test('an app delegation is app.<name>, and only such names map back to an app', () => {
  assert.equal(delegatedRoleName('web'), 'app.web');
  assert.equal(appOfRole('app.web'), 'web');
  for (const role of ['root', 'targets', 'snapshot', 'timestamp', 'app.', 'app.We', 'app.a.b', 'web']) assert.equal(appOfRole(role), null, role);
  assert.throws(() => delegatedRoleName('a.b'));
  assert.throws(() => delegatedRoleName('Web'));
});

test("a release's target paths are <app>/<version>/<file>, for valid names only", () => {
  assert.equal(manifestTargetPath('web', '1.2.3'), 'web/1.2.3/manifest.json');
  assert.equal(indexTargetPath('web', '1.2.3-rc.1'), 'web/1.2.3-rc.1/index.json');
  assert.equal(downgradeTargetPath('web', '1.0.0'), 'web/1.0.0/downgrade.json');
  assert.throws(() => manifestTargetPath('web', '../1'));
  assert.throws(() => manifestTargetPath('../web', '1.0.0'));
});

test("TUF's times are UTC to the second", () => {
  assert.equal(tufTime(Date.UTC(2030, 0, 1, 0, 0, 0, 999)), '2030-01-01T00:00:00Z');
});
