import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runIn as run, shIn as sh } from '../helpers/container-exec.js';
import { bootForDpkg, helperExe, statusOnceUp } from '../helpers/deb-container.js';

// The package's maintainer scripts under a real systemd (test/helpers/deb-container.ts):
// install creates the user, folders, key, default config and the agent release and starts the
// helper, which agentctl then reaches; installing again restarts it; purge removes steward's state and keeps
// the apps' own data.

test('dpkg -i starts a working helper, a second dpkg -i keeps it working, and purge keeps /var/lib/steward-apps', { timeout: 300_000 }, async (t) => {
  const c = await bootForDpkg(t);
  if (!c) return;
  const { box, deb: inBox, version, dpkg } = c;

  const install = await run(box, 'dpkg', dpkg('-i', inBox), 180_000);
  assert.equal(install.code, 0, install.text);
  assert.equal((await run(box, 'systemctl', ['is-enabled', 'steward-helper.service'])).stdout.trim(), 'enabled');
  const status = await statusOnceUp(box);
  assert.match(status.text, new RegExp(`"steward-agent"[\\s\\S]*"current":\\s*"${version.replace(/\./g, '\\.')}"`), status.text);
  await sh(box, 'getent passwd steward && test -s /var/lib/steward/keys/helper.key && test -f /etc/steward/steward.json && test -d /var/lib/steward-apps');
  // The helper runs the package's own Node.js.
  assert.equal(await helperExe(box), `/usr/lib/steward/${version}/node/bin/node`);

  // Again (dpkg's upgrade path, the same version): the helper is restarted and answers.
  const pidBefore = (await run(box, 'systemctl', ['show', '-p', 'MainPID', '--value', 'steward-helper.service'])).stdout.trim();
  const again = await run(box, 'dpkg', dpkg('-i', inBox), 180_000);
  assert.equal(again.code, 0, again.text);
  const pidAfter = (await run(box, 'systemctl', ['show', '-p', 'MainPID', '--value', 'steward-helper.service'])).stdout.trim();
  assert.notEqual(pidAfter, pidBefore, 'the helper was restarted');
  await statusOnceUp(box);

  // Purge: steward's state goes, the apps' data stays.
  await sh(box, 'mkdir -p /var/lib/steward-apps/web && echo kept > /var/lib/steward-apps/web/data');
  const purge = await run(box, 'dpkg', dpkg('--purge', 'steward'), 120_000);
  assert.equal(purge.code, 0, purge.text);
  await sh(box, 'for d in /etc/steward /var/lib/steward /var/lib/steward-agent /opt/steward /var/log/steward /run/steward; do test ! -e "$d" || { echo "$d is left"; exit 1; }; done');
  assert.equal((await sh(box, 'cat /var/lib/steward-apps/web/data')).stdout, 'kept\n');
  assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-helper.service'])).stdout.trim(), 'active');
});
