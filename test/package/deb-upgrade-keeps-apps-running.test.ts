import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runIn as run, shIn as sh } from '../helpers/container-exec.js';
import { bootForDpkg, helperExe, mainPid, nextPatch, runWebApp, statusOnceUp, webRunning } from '../helpers/deb-container.js';

// An upgrade to a newer package under a real systemd (test/helpers/deb-container.ts) with an app
// running: the new postinst restarts the helper onto the new version's code and Node.js, and the
// app goes on as the same process, which the new helper adopts (DESIGN §14: apps keep running
// across an upgrade; KillMode=process and one transient unit per app).

test('dpkg -i of a newer package restarts the helper on the new version and leaves a running app as it was', { timeout: 300_000 }, async (t) => {
  const c = await bootForDpkg(t);
  if (!c) return;
  const { box, deb, version, dpkg } = c;
  const newer = nextPatch(version);
  const newerDeb = await c.buildDeb(newer);

  const install = await run(box, 'dpkg', dpkg('-i', deb), 180_000);
  assert.equal(install.code, 0, install.text);
  await statusOnceUp(box);
  const appPid = await runWebApp(box);
  const appUnitPid = await mainPid(box, 'steward-app-web.service');
  assert.equal(appUnitPid, String(appPid), 'web runs as its own unit');
  const helperPid = await mainPid(box, 'steward-helper.service');

  const upgrade = await run(box, 'dpkg', dpkg('-i', newerDeb), 180_000);
  assert.equal(upgrade.code, 0, upgrade.text);
  assert.match((await run(box, 'dpkg-query', dpkg('-W', '-f', '${Version}', 'steward'))).stdout, new RegExp(`^${newer.replace(/\./g, '\\.')}$`));
  await statusOnceUp(box);
  assert.notEqual(await mainPid(box, 'steward-helper.service'), helperPid, 'the helper was restarted');
  assert.equal(await helperExe(box), `/usr/lib/steward/${newer}/node/bin/node`);
  assert.equal((await run(box, 'agentctl', ['--version'])).stdout.trim(), newer);
  // dpkg removed the older version's files; nothing runs from them.
  await sh(box, `test ! -e /usr/lib/steward/${version}`);

  const web = await webRunning(box);
  assert.equal(web.supervisor.pid, appPid, 'web is the same process');
  assert.equal(web.current, '1.0.0');
  assert.equal(await mainPid(box, 'steward-app-web.service'), appUnitPid);
});
