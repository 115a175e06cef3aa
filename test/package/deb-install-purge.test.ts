import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runIn as run, shIn as sh } from '../helpers/container-exec.js';
import { exampleLines, printedPattern, readmeShellBlocks } from '../helpers/readme.js';
import { bootForDpkg, helperExe, mainPid, runWebApp, statusOnceUp } from '../helpers/deb-container.js';

// The package's maintainer scripts under a real systemd (test/helpers/deb-container.ts):
// install creates the user, folders, key, default config and the agent release and starts the
// helper, which agentctl then reaches; installing again restarts it; purge stops the apps, removes
// steward's state and keeps the apps' own data.

test('dpkg -i starts a working helper, a second dpkg -i keeps it working, and purge stops a detached app and keeps /var/lib/steward-apps', { timeout: 300_000 }, async (t) => {
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
  // The README installs by package: its "Check it" lines hold as printed, with sudo's PATH
  // (the suite is root, for whom sudo adds nothing; the container has none).
  const check = exampleLines(readmeShellBlocks('## Install on a host', 'Check it:')[0] as string);
  assert.ok(check.some((l) => /^sudo agentctl /.test(l.command)), JSON.stringify(check));
  for (const { command, prints } of check) {
    const r = await run(box, '/usr/bin/env', ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', '/bin/sh', '-c', command.replace(/^sudo /, '')]);
    assert.equal(r.code, 0, `${command}: ${r.text}`);
    if (prints) assert.match(r.stdout, printedPattern(prints), command);
  }

  // Again (dpkg's upgrade path, the same version): the helper is restarted and answers.
  const pidBefore = await mainPid(box, 'steward-helper.service');
  const again = await run(box, 'dpkg', dpkg('-i', inBox), 180_000);
  assert.equal(again.code, 0, again.text);
  assert.notEqual(await mainPid(box, 'steward-helper.service'), pidBefore, 'the helper was restarted');
  await statusOnceUp(box);

  // An app of the detached runner: a child of the helper in the helper unit's cgroup, which the
  // helper's stop leaves running (KillMode=process), on a release tree that purge removes.
  const app = await runWebApp(box, 'detached');
  assert.match((await sh(box, `cat /proc/${app}/cgroup`)).stdout, /\/system\.slice\/steward-helper\.service$/m);
  await sh(box, 'echo kept > /var/lib/steward-apps/web/data');

  // Purge: the app stops, steward's state goes, the apps' data stays.
  const purge = await run(box, 'dpkg', dpkg('--purge', 'steward'), 120_000);
  assert.equal(purge.code, 0, purge.text);
  const left = await run(box, '/bin/sh', ['-c', `test -e /proc/${app} && ! grep -q '^[^)]*) Z' /proc/${app}/stat && cat /proc/${app}/cmdline | tr '\\0' ' '`]);
  assert.notEqual(left.code, 0, `web (pid ${app}) still runs after purge: ${left.stdout}`);
  await sh(box, 'for d in /etc/steward /var/lib/steward /var/lib/steward-agent /opt/steward /var/log/steward /run/steward; do test ! -e "$d" || { echo "$d is left"; exit 1; }; done');
  assert.equal((await sh(box, 'cat /var/lib/steward-apps/web/data')).stdout, 'kept\n');
  assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-helper.service'])).stdout.trim(), 'active');
});
