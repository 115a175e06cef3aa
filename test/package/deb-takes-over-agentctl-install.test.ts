import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runIn as run, shIn as sh } from '../helpers/container-exec.js';
import { bootForDpkg, helperExe, statusOnceUp } from '../helpers/deb-container.js';
import { CONTAINER_REPO } from '../helpers/systemd-container.js';

// A host set up by `agentctl install` (units in /etc/systemd/system, code in /opt/steward/lib,
// /usr/local/bin/agentctl) then given the package: its files in /etc would override the
// package's units and sysusers.d/tmpfiles.d files, and its helper would go on running code that
// is no longer there. The package's postinst removes them and restarts the helper on its own
// node; the state (key, config, the agent's release) stays as it was.

test('installing the package over an agentctl install moves the helper to the package and keeps the host state', { timeout: 300_000 }, async (t) => {
  const c = await bootForDpkg(t);
  if (!c) return;
  const { box, deb, version, dpkg } = c;

  const earlier = await run(box, '/usr/bin/node', [`${CONTAINER_REPO}/bin/agentctl.js`, 'install'], 180_000);
  assert.equal(earlier.code, 0, earlier.text);
  await statusOnceUp(box);
  assert.equal(await helperExe(box), '/usr/bin/node');
  const keyBefore = (await sh(box, 'sha256sum /var/lib/steward/keys/helper.key /etc/steward/steward.json')).stdout;

  const install = await run(box, 'dpkg', dpkg('-i', deb), 180_000);
  assert.equal(install.code, 0, install.text);
  await sh(box, 'for f in /etc/systemd/system/steward-helper.service /etc/systemd/system/steward-agent.service /etc/sysusers.d/steward.conf /etc/tmpfiles.d/steward.conf /usr/local/bin/agentctl /opt/steward/lib; do test ! -e "$f" || { echo "$f is left"; exit 1; }; done');
  // /lib is /usr/lib on a merged-/usr host; systemd may name either.
  assert.match((await sh(box, 'systemctl show -p FragmentPath --value steward-helper.service')).stdout.trim(), /^(\/usr)?\/lib\/systemd\/system\/steward-helper\.service$/);
  const status = await statusOnceUp(box);
  assert.equal(await helperExe(box), `/usr/lib/steward/${version}/node/bin/node`);
  assert.match(status.text, /"steward-agent"/, status.text);
  assert.equal((await sh(box, 'sha256sum /var/lib/steward/keys/helper.key /etc/steward/steward.json')).stdout, keyBefore, 'the helper key and the config are kept');
});
