import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildStewardDeb } from '../../scripts/package.js';
import { REPO } from '../helpers/host.js';
import { runIn as run, shIn as sh } from '../helpers/container-exec.js';
import { bootOrSkip, waitFor } from '../helpers/systemd-container.js';

// The package's maintainer scripts under a real systemd (a booted container whose /usr and
// dpkg database are overlays of this host's, so dpkg installs into them): install creates
// the user, folders, key, default config and the agent release and starts the helper, which
// agentctl then reaches; installing again restarts it; purge removes steward's state and keeps
// the apps' own data.

// dpkg's database, at the top: systemd-nspawn makes no parent folders for an overlay's mount
// point, and /var of a volatile container is an empty tmpfs.
const ADMINDIR = '/dpkg';
const dpkg = (...args: string[]) => ['--admindir', ADMINDIR, ...args];

test('dpkg -i starts a working helper, a second dpkg -i keeps it working, and purge keeps /var/lib/steward-apps', { timeout: 300_000 }, async (t) => {
  const out = mkdtempSync(path.join(os.tmpdir(), 'steward-deb-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  // The writes into /usr and dpkg's database land in folders of `out` (overlayfs upper layers).
  const upper = (name: string) => {
    mkdirSync(path.join(out, name));
    return path.join(out, name);
  };
  const overlays: Array<[string, string, string]> = [['/usr', upper('usr'), '/usr'], ['/var/lib/dpkg', upper('dpkg'), ADMINDIR]];
  const box = await bootOrSkip(t, { bindRo: [[upper('deb'), '/opt/deb']], overlays });
  if (!box) return;
  t.after(() => box.stop());
  const { deb, version } = await buildStewardDeb(REPO, path.join(out, 'deb'), { compression: 'gzip' });
  const inBox = `/opt/deb/${path.basename(deb)}`;

  // The host's overrides name groups (ssl-cert) that the container's empty /etc does not have;
  // a Docker image's policy-rc.d (exit 101) would forbid deb-systemd-invoke to start anything,
  // which a real host has not. Both changes land in the overlays' upper layers only.
  await sh(box, `: > ${ADMINDIR}/statoverride && rm -f /usr/sbin/policy-rc.d`);
  const install = await run(box, 'dpkg', dpkg('-i', inBox), 180_000);
  assert.equal(install.code, 0, install.text);
  assert.equal((await run(box, 'systemctl', ['is-enabled', 'steward-helper.service'])).stdout.trim(), 'enabled');
  let last = '';
  const status = await waitFor('agentctl status through the packaged helper', async () => {
    const r = await run(box, 'agentctl', ['--json', 'status']);
    last = r.text;
    return r.code === 0 ? r : null;
  }, 30_000, 500).catch(async (err: Error) => {
    const journal = await run(box, 'journalctl', ['-u', 'steward-helper.service', '--no-pager', '-n', '40']);
    throw new Error(`${err.message}: ${last}\n--- the helper's journal ---\n${journal.text}`);
  });
  assert.match(status.text, new RegExp(`"steward-agent"[\\s\\S]*"current":\\s*"${version.replace(/\./g, '\\.')}"`), status.text);
  await sh(box, 'getent passwd steward && test -s /var/lib/steward/keys/helper.key && test -f /etc/steward/steward.json && test -d /var/lib/steward-apps');
  // The helper runs the package's own Node.js.
  const exe = await sh(box, 'readlink /proc/$(systemctl show -p MainPID --value steward-helper.service)/exe');
  assert.equal(exe.stdout.trim(), `/usr/lib/steward/${version}/node/bin/node`);

  // Again (dpkg's upgrade path, the same version): the helper is restarted and answers.
  const pidBefore = (await run(box, 'systemctl', ['show', '-p', 'MainPID', '--value', 'steward-helper.service'])).stdout.trim();
  const again = await run(box, 'dpkg', dpkg('-i', inBox), 180_000);
  assert.equal(again.code, 0, again.text);
  const pidAfter = (await run(box, 'systemctl', ['show', '-p', 'MainPID', '--value', 'steward-helper.service'])).stdout.trim();
  assert.notEqual(pidAfter, pidBefore, 'the helper was restarted');
  await waitFor('agentctl status after the second install', async () => (await run(box, 'agentctl', ['status'])).code === 0, 60_000, 500);

  // Purge: steward's state goes, the apps' data stays.
  await sh(box, 'mkdir -p /var/lib/steward-apps/web && echo kept > /var/lib/steward-apps/web/data');
  const purge = await run(box, 'dpkg', dpkg('--purge', 'steward'), 120_000);
  assert.equal(purge.code, 0, purge.text);
  await sh(box, 'for d in /etc/steward /var/lib/steward /var/lib/steward-agent /opt/steward /var/log/steward /run/steward; do test ! -e "$d" || { echo "$d is left"; exit 1; }; done');
  assert.equal((await sh(box, 'cat /var/lib/steward-apps/web/data')).stdout, 'kept\n');
  assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-helper.service'])).stdout.trim(), 'active');
});
