import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { runIn as run, shIn as sh, writeIn } from '../helpers/container-exec.js';
import { bootForDpkg, helperExe, mainPid, nextPatch, runWebApp, statusOnceUp, webRunning } from '../helpers/deb-container.js';
import { waitFor, type SystemdContainer } from '../helpers/systemd-container.js';
import { appRelease, fetchVersion, freePort } from '../fixtures/app-releases.js';
import { sri } from '../helpers/host.js';

// An upgrade to a newer package under a real systemd (test/helpers/deb-container.ts) with an app
// running: the new postinst restarts the helper onto the new version's code and Node.js, and the
// app goes on as the same process, which the new helper adopts (docs/design.md §14: apps keep running
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
  // The node_exporter textfile at the path docs/metrics.md names (issue 31 item 3: the unit's
  // ProtectSystem=strict made it EROFS), its folder root's as the docs ask.
  await sh(box, `install -d -m 0755 -o root -g root ${path.dirname(TEXTFILE)}`);
  // `api` has a socket and says when it is ready (docs/design.md §17): under the packaged unit's
  // sandbox (ProtectSystem=strict, which leaves /run writable) the helper makes its readiness FIFO
  // in /run/steward-fds and its socket units in /run/systemd/system.
  const apiPort = await freePort();
  const api = { runner: 'process', user: 'stwweb', group: 'stwweb', sockets: [{ name: 'http', listen: `127.0.0.1:${apiPort}` }] };
  const appPid = await runWebApp(box, 'auto', { api }, { metrics: { textfile: TEXTFILE } });
  await updateApi(box, '1.0.0', apiPort);
  await textfileSays(box, /^steward_app_info\{app="web",version="1\.0\.0"\} 1$/m);
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
  // The new helper keeps the textfile too, and no write of it failed.
  await textfileSays(box, /^steward_textfile_write_errors_total 0$/m);
  // The app steward is the version the helper runs (issue 31 item 20: `none` on a host that never
  // updated itself).
  await textfileSays(box, new RegExp(`^steward_app_info\\{app="steward",version="${newer.replace(/\./g, '\\.')}"\\} 1$`, 'm'));
  // The socket app goes on being handed over by the new helper, under the new unit's sandbox.
  await updateApi(box, '1.0.1', apiPort);
  const journal = (await run(box, 'journalctl', ['-u', 'steward-helper.service', '--no-pager', '-o', 'cat'])).stdout;
  assert.doesNotMatch(journal, /metrics textfile .* not written/);
  // Issue 31 item 20: the helper's restarts leave none of its processes behind in its unit (web's
  // systemd-run client was, and systemd warned of it at each restart).
  assert.doesNotMatch(journal, /left-over process|remains running after unit stopped/);
});

const TEXTFILE = '/var/lib/prometheus/node-exporter/steward.prom';

// Updates `api` (sockets, start.ready "fd") to `version` in the container; it must end active and
// answer with that version on its socket.
async function updateApi(box: SystemdContainer, version: string, port: number): Promise<void> {
  const tgz = appRelease('api', version, port, { stableMs: 200, timeoutMs: 20_000, ready: 'after', readyAfterMs: 50, watchMs: 0 });
  await writeIn(box, `/tmp/api-${version}.tgz`, tgz);
  const up = await run(box, 'agentctl', ['--json', 'update', 'api', version, '--file', `/tmp/api-${version}.tgz`, '--integrity', sri(tgz), '--allow-unsigned'], 120_000);
  assert.equal(up.json?.outcome, 'active', up.text);
  assert.equal(await fetchVersion(port), version, `api ${version} answers on its socket`);
}

// Waits until the helper's textfile in the container matches `re`.
async function textfileSays(box: SystemdContainer, re: RegExp): Promise<void> {
  let last = '';
  await waitFor(`${TEXTFILE} to match ${re}`, async () => {
    last = (await run(box, 'cat', [TEXTFILE])).stdout;
    return re.test(last);
  }, 20_000, 250).catch(async (err: Error) => {
    const journal = (await run(box, 'journalctl', ['-u', 'steward-helper.service', '--no-pager', '-o', 'cat', '-n', '20'])).stdout;
    throw new Error(`${err.message}: ${last || '(no file)'}\n--- the helper's journal ---\n${journal}`);
  });
}
