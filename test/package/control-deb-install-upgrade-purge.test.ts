import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runIn as run, shIn as sh, type RunResult } from '../helpers/container-exec.js';
import { CONTROL_DEB } from '../helpers/deb-cache.js';
import { bootForDpkg, mainPid, nextPatch } from '../helpers/deb-container.js';
import { waitFor, type SystemdContainer } from '../helpers/systemd-container.js';

// steward-control's package under a real systemd (test/helpers/deb-container.ts): dpkg -i makes
// its user and database and starts the unit, which answers on loopback as the shipped settings
// say; an upgrade to a newer package restarts it on the new code and keeps the database; remove
// stops it and keeps the state; purge removes the state.

const DB = '/var/lib/steward-control/control.db';
// The shipped settings' metrics listener (packaging/debian/steward-control.conf).
const READYZ = 'http://127.0.0.1:9464/readyz';

// The steward-control CLI on the unit's database, as its user (docs/package.md says sudo -u,
// which the container's empty /etc has no configuration for).
const cli = (box: SystemdContainer, ...args: string[]) => run(box, 'setpriv', ['--reuid=steward-control', '--regid=steward-control', '--init-groups', 'steward-control', '--db', DB, '--json', ...args]);

// GET /readyz once it answers 200 (the store answers); the unit's journal in the error if not.
async function ready(box: SystemdContainer): Promise<RunResult> {
  let last = '';
  return waitFor('steward-control /readyz', async () => {
    const r = await run(box, 'curl', ['-fsS', READYZ]);
    last = r.text;
    return r.code === 0 && r.stdout === 'ready\n' ? r : null;
  }, 30_000, 250).catch(async (err: Error) => {
    const journal = await run(box, 'journalctl', ['-u', 'steward-control.service', '--no-pager', '-n', '40']);
    throw new Error(`${err.message}: ${last}\n--- the unit's journal ---\n${journal.text}`);
  });
}

// The unit's main process's executable. A MainPID of 0 (the process gone) fails with the unit's
// journal, which says why: seen once under load right after /readyz answered.
const exe = async (box: SystemdContainer) => {
  const pid = await mainPid(box, 'steward-control.service');
  if (!pid || pid === '0') {
    const journal = await run(box, 'journalctl', ['-u', 'steward-control.service', '--no-pager', '-n', '60']);
    throw new Error(`steward-control.service has no main process (MainPID ${pid}); the unit's journal:\n${journal.text}`);
  }
  return (await sh(box, `readlink /proc/${pid}/exe`)).stdout.trim();
};

test('dpkg -i starts steward-control on its own database, an upgrade keeps the database, remove keeps the state and purge removes it', { timeout: 300_000 }, async (t) => {
  // The test never compiles better-sqlite3: without its cached build it skips (fails under CI).
  const c = await bootForDpkg(t, CONTROL_DEB);
  if (!c) return;
  const { box, deb, version, dpkg } = c;
  const newer = nextPatch(version);
  const newerDeb = await c.buildDeb(newer);

  const install = await run(box, 'dpkg', dpkg('-i', deb), 180_000);
  assert.equal(install.code, 0, install.text);
  assert.equal((await run(box, 'systemctl', ['is-enabled', 'steward-control.service'])).stdout.trim(), 'enabled');
  await ready(box);
  assert.equal(await exe(box), `/usr/lib/steward-control/${version}/node/bin/node`);
  // Its own user, which owns the database the postinst made; the CLI works on it.
  await sh(box, `getent passwd steward-control && test "$(stat -c %U ${DB})" = steward-control && test "$(stat -c %U:%a /var/lib/steward-control)" = steward-control:750`);
  const token = await cli(box, 'token', 'create');
  assert.equal(token.code, 0, token.text);
  const id = token.json.id as string;
  assert.equal((await run(box, 'steward-control', ['--version'])).stdout.trim(), version);

  // Reload: the unit's ExecReload signals serve (SIGHUP), which stays up on the same process;
  // the shipped settings are plain http on loopback, so it has no TLS files to read again.
  const before = await mainPid(box, 'steward-control.service');
  const reload = await run(box, 'systemctl', ['reload', 'steward-control.service']);
  assert.equal(reload.code, 0, reload.text);
  await waitFor('the reload in the journal', async () => {
    const j = await run(box, 'journalctl', ['-u', 'steward-control.service', '--no-pager', '-n', '40']);
    return j.stdout.includes('SIGHUP: plain http, no TLS files to read again') ? j : null;
  }, 15_000, 250);
  await ready(box);
  assert.equal(await mainPid(box, 'steward-control.service'), before, 'the reload did not restart serve');

  // Upgrade: restarted on the new version's node and code, with the same database.
  const pid = await mainPid(box, 'steward-control.service');
  const upgrade = await run(box, 'dpkg', dpkg('-i', newerDeb), 180_000);
  assert.equal(upgrade.code, 0, upgrade.text);
  assert.match((await run(box, 'dpkg-query', dpkg('-W', '-f', '${Version}', 'steward-control'))).stdout, new RegExp(`^${newer.replace(/\./g, '\\.')}$`));
  await ready(box);
  assert.notEqual(await mainPid(box, 'steward-control.service'), pid, 'steward-control was restarted');
  assert.equal(await exe(box), `/usr/lib/steward-control/${newer}/node/bin/node`);
  await sh(box, `test ! -e /usr/lib/steward-control/${version}`);
  const tokens = await cli(box, 'token', 'list');
  assert.equal(tokens.code, 0, tokens.text);
  assert.deepEqual(tokens.json.tokens.map((k: { id: string }) => k.id), [id]);

  // Remove: stopped, the database and the settings stay.
  const remove = await run(box, 'dpkg', dpkg('-r', 'steward-control'), 120_000);
  assert.equal(remove.code, 0, remove.text);
  assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-control.service'])).stdout.trim(), 'active');
  await sh(box, `test -s ${DB} && test -f /etc/steward-control/steward-control.conf`);

  // Purge: the state goes.
  const purge = await run(box, 'dpkg', dpkg('--purge', 'steward-control'), 120_000);
  assert.equal(purge.code, 0, purge.text);
  await sh(box, 'for d in /var/lib/steward-control /etc/steward-control; do test ! -e "$d" || { echo "$d is left"; exit 1; }; done');
});
