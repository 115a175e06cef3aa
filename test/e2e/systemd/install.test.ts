import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appRelease, freePort } from '../../fixtures/app-releases.js';
import { REPO, sri } from '../../helpers/host.js';
import { packageVersion } from '../../../src/install/agent-release-pack.js';
import { DEFAULT_CONFIG } from '../../../src/install/install-layout.js';
import { bootOrSkip, CONTAINER_REPO, waitFor, type SystemdContainer } from '../../helpers/systemd-container.js';
import { reportScenarios, runIn as run, shIn as sh, writeIn } from '../../helpers/container-exec.js';
import { CONTROL_BIN, serveControl } from '../../helpers/container-control.js';
import { exampleLines, printedPattern, readmeShellBlocks } from '../../helpers/readme.js';

// `agentctl install` on a real systemd 252 (booted in a container; the repository is mounted
// read-only at /opt/src, so install copies steward from there): the user, the units, the modes of
// docs/design.md §2, what the `steward` user is denied, an enrollment with the agent running as its unit,
// a second install that changes nothing, and `uninstall --purge` leaving nothing behind.

const AGENTCTL = `${CONTAINER_REPO}/bin/agentctl.js`;
const INSTALLED = '/opt/steward/lib/bin';
// Where install puts agentctl on the PATH. /usr is the host's, read-only, in the container: the
// suite gives /usr/local/bin a tmpfs of its own.
const LAUNCHER = '/usr/local/bin/agentctl';
// sudo's secure_path on Debian: what `sudo agentctl` searches.
const SUDO_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

// Runs `args` as the steward user with its groups (setpriv: no login shell, no PAM).
async function asSteward(box: SystemdContainer, args: string[]) {
  return run(box, 'setpriv', ['--reuid=steward', '--regid=steward', '--init-groups', '--', ...args]);
}

// Connects to a Unix socket as the steward user: 'connected' or the errno code.
const CONNECT = "require('net').connect(process.argv[1]).on('connect',()=>{console.log('connected');process.exit(0)}).on('error',e=>{console.log(e.code);process.exit(0)})";

test('agentctl install sets steward up under a real systemd, idempotently, and uninstall --purge removes it', { timeout: 300_000 }, async (t) => {
  const box = await bootOrSkip(t, { tmpfs: ['/usr/local/bin'] });
  if (!box) return;
  const ran: string[] = [];
  const planned = 11;
  t.after(async () => {
    await reportScenarios(box, ran, planned, { units: ['steward-helper', 'steward-agent'], lines: 60 });
    await box.stop();
  });

  const first = await run(box, '/usr/bin/node', [AGENTCTL, 'install'], 180_000);
  console.log(`first install:\n${first.stdout}`);
  assert.equal(first.code, 0, first.text);
  assert.match(first.stdout, /^created\s+code\s+\/opt\/steward\/lib/m);
  assert.match(first.stdout, /^created\s+agentctl\s+\/usr\/local\/bin\/agentctl \(runs \/opt\/steward\/lib\/bin\/agentctl\.js\)$/m);
  assert.match(first.stdout, /^ran\s+start\s+systemctl enable --now steward-helper\.service/m);

  await t.test('the steward user and group exist, without a login shell', async () => {
    const pw = await run(box, 'getent', ['passwd', 'steward']);
    assert.equal(pw.code, 0, pw.text);
    const f = pw.stdout.trim().split(':');
    assert.ok(Number(f[2]) > 0 && Number(f[2]) < 1000, `a system uid: ${pw.stdout}`);
    assert.equal(f[6], '/usr/sbin/nologin');
    assert.equal((await run(box, 'getent', ['group', 'steward'])).code, 0);
    ran.push('user and group');
  });

  await t.test('steward-helper is active from the installed code and agentctl status works as root', async () => {
    assert.equal((await run(box, 'systemctl', ['is-active', 'steward-helper'])).stdout.trim(), 'active');
    assert.equal((await run(box, 'systemctl', ['is-enabled', 'steward-helper'])).stdout.trim(), 'enabled');
    const exec = (await run(box, 'systemctl', ['show', '-p', 'ExecStart', 'steward-helper'])).stdout;
    assert.match(exec, /\/opt\/steward\/lib\/bin\/steward-helper\.js/);
    // The installed code is the host programs' bundles and launchers (docs/design.md §15), nothing else.
    const lib = await run(box, 'sh', ['-c', 'cd /opt/steward/lib && ls -d * bin/* dist/* dist/bundle/*']);
    assert.deepEqual(lib.stdout.trim().split('\n').sort(), [
      'README.md', 'bin', 'dist', 'docs', 'package.json', 'systemd',
      'bin/agentctl.js', 'bin/steward-agent.js', 'bin/steward-helper.js',
      'dist/bundle',
      'dist/bundle/agentctl', 'dist/bundle/steward-agent', 'dist/bundle/steward-helper',
    ].sort());
    const st = await waitFor('agentctl status', async () => {
      const r = await run(box, '/usr/bin/node', [`${INSTALLED}/agentctl.js`, 'status', '--json']);
      return r.code === 0 && r.json?.recovering === false ? r : null;
    }, 30_000, 200);
    // The agent itself is the one app of a fresh install (issue 6 item 3; agent-as-app.test.ts).
    assert.deepEqual(st.json.apps.map((a: any) => [a.name, a.runner, a.current]), [['steward-agent', 'unit', packageVersion(REPO)]]);
    assert.equal(st.json.root, '/');
    ran.push('helper active, status as root');
  });

  await t.test('the README\'s "Check it" lines work as printed, agentctl found on sudo\'s PATH', async () => {
    const lines = exampleLines(readmeShellBlocks('## Install on a host', 'Check it:')[0] as string);
    assert.ok(lines.some((l) => /^sudo agentctl /.test(l.command)), JSON.stringify(lines));
    for (const { command, prints } of lines) {
      // The suite is root, for whom sudo adds nothing (and the container has none): its PATH is.
      const r = await run(box, '/usr/bin/env', [`PATH=${SUDO_PATH}`, '/bin/sh', '-c', command.replace(/^sudo /, '')]);
      assert.equal(r.code, 0, `${command}: ${r.text}`);
      if (prints) assert.match(r.stdout, printedPattern(prints), `${command}`);
    }
    const st = await run(box, 'stat', ['-c', '%a %U:%G %F', LAUNCHER]);
    assert.equal(st.stdout.trim(), '755 root:root regular file');
    ran.push('README check lines, agentctl on the PATH');
  });

  await t.test('nothing under /opt/steward /etc/steward /var/lib/steward /run/steward is the steward user\'s or writable by others but helper.sock', async () => {
    const r = await run(box, 'find', ['/opt/steward', '/etc/steward', '/var/lib/steward', '/run/steward', '(', '-user', 'steward', '-o', '-perm', '/022', ')']);
    assert.equal(r.code, 0, r.text);
    const hits = r.stdout.split('\n').filter(Boolean);
    // Symlinks always read 0777 (their mode means nothing on Linux): the `current` link of the
    // agent's release is the one symlink (the installed code is bundles, no node_modules).
    const links: string[] = hits.filter((p) => p === '/opt/steward/apps/steward-agent/current');
    for (const l of links) assert.equal((await run(box, 'test', ['-L', l])).code, 0, `${l} is a symlink`);
    assert.deepEqual(hits.filter((p) => !links.includes(p)), ['/run/steward/helper.sock']);
    const modes = await run(box, 'stat', ['-c', '%n %a %U:%G', '/run/steward', '/run/steward/helper.sock', '/run/steward/admin.sock', '/var/lib/steward/receipts', '/var/lib/steward/keys/helper.key', '/var/lib/steward-agent', '/etc/steward/steward.json']);
    assert.deepEqual(modes.stdout.trim().split('\n'), [
      '/run/steward 750 root:steward',
      '/run/steward/helper.sock 660 root:steward',
      '/run/steward/admin.sock 600 root:root',
      '/var/lib/steward/receipts 750 root:steward',
      '/var/lib/steward/keys/helper.key 600 root:root',
      '/var/lib/steward-agent 700 steward:steward',
      '/etc/steward/steward.json 644 root:root',
    ]);
    ran.push(`find: only helper.sock (+${links.length} symlink: the agent's current)`);
  });

  await t.test('the steward user is denied admin.sock, the journal folder and the helper key, and may use helper.sock', async () => {
    assert.equal((await asSteward(box, ['/usr/bin/node', '-e', CONNECT, '/run/steward/admin.sock'])).stdout.trim(), 'EACCES');
    assert.equal((await asSteward(box, ['/usr/bin/node', '-e', CONNECT, '/run/steward/helper.sock'])).stdout.trim(), 'connected');
    const journal = await asSteward(box, ['ls', '/var/lib/steward/journal']);
    assert.notEqual(journal.code, 0);
    assert.match(journal.stderr, /Permission denied/);
    const key = await asSteward(box, ['cat', '/var/lib/steward/keys/helper.key']);
    assert.notEqual(key.code, 0);
    assert.match(key.stderr, /Permission denied/);
    const status = await asSteward(box, ['/usr/bin/node', `${INSTALLED}/agentctl.js`, 'status', '--json']);
    assert.equal(status.code, 0, `status over helper.sock as steward: ${status.text}`);
    ran.push('steward denied admin.sock, journal, key');
  });

  await t.test('the hardened helper unit updates an app (a tarball in /tmp, over admin.sock) that runs as its own unit and outlives a helper restart', async () => {
    assert.equal((await run(box, 'useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'stwweb'])).code, 0);
    const config = { apps: { ...DEFAULT_CONFIG.apps, web: { runner: 'process', user: 'stwweb', group: 'stwweb' } } };
    await writeIn(box, '/etc/steward/steward.json', JSON.stringify(config, null, 2));
    assert.equal((await run(box, 'systemctl', ['restart', 'steward-helper'])).code, 0);
    const ctl = ['/usr/bin/node', `${INSTALLED}/agentctl.js`];
    await waitFor('the restarted helper', async () => (await run(box, ctl[0] as string, [ctl[1] as string, 'status', '--json'])).json?.recovering === false, 30_000, 200);
    const port = await freePort();
    const tgz = appRelease('web', '1.0.0', port, { stableMs: 200 });
    await writeIn(box, '/tmp/web-1.0.0.tgz', tgz);
    const up = await run(box, ctl[0] as string, [ctl[1] as string, 'update', 'web', '1.0.0', '--file', '/tmp/web-1.0.0.tgz', '--integrity', sri(tgz), '--allow-unsigned', '--json'], 120_000);
    assert.equal(up.code, 0, up.text);
    assert.equal(up.json.outcome, 'active', up.text);
    const show = async () => (await run(box, 'systemctl', ['show', '-p', 'MainPID', '-p', 'User', '-p', 'ActiveState', 'steward-app-web.service'])).stdout;
    const before = await show();
    assert.match(before, /User=stwweb/);
    assert.match(before, /ActiveState=active/);
    assert.equal((await run(box, 'systemctl', ['restart', 'steward-helper'])).code, 0);
    const st = await waitFor('the helper to adopt web', async () => {
      const r = await run(box, ctl[0] as string, [ctl[1] as string, 'status', 'web', '--json']);
      return r.json?.recovering === false && r.json.apps[0]?.supervisor?.state === 'running' ? r.json.apps[0] : null;
    }, 30_000, 200);
    assert.equal(await show(), before, 'the app unit (and its pid) is untouched by the helper restart');
    assert.equal(`MainPID=${st.supervisor.pid}`, before.split('\n').find((l) => l.startsWith('MainPID=')));
    // Leave the host config as install made it for the idempotence check below.
    assert.equal((await run(box, ctl[0] as string, [ctl[1] as string, 'stop', 'web', '--json'])).code, 0);
    await writeIn(box, '/etc/steward/steward.json', JSON.stringify(DEFAULT_CONFIG, null, 2) + '\n');
    assert.equal((await run(box, 'systemctl', ['restart', 'steward-helper'])).code, 0);
    ran.push('app update + survives helper restart under the hardened unit');
  });

  await t.test('enrolled against steward-control on the loopback, the agent unit heartbeats as steward', async () => {
    const db = '/var/tmp/control.db';
    const control = ['/usr/bin/node', CONTROL_BIN];
    const { url, stop: stopServe } = await serveControl(box, db, 2);
    const token = await run(box, control[0] as string, [control[1] as string, 'token', 'create', '--db', db, '--json']);
    assert.equal(token.code, 0, token.text);
    const enroll = await run(box, '/usr/bin/node', [`${INSTALLED}/agentctl.js`, 'enroll', '--control-plane', url, '--token', token.json.token, '--json']);
    assert.equal(enroll.code, 0, enroll.text);
    const nodeId = enroll.json.nodeId as string;
    const start = await run(box, 'systemctl', ['enable', '--now', 'steward-agent.service']);
    assert.equal(start.code, 0, start.text);
    const node = await waitFor('a heartbeat from the agent unit', async () => {
      const r = await run(box, control[0] as string, [control[1] as string, 'nodes', '--db', db, '--json']);
      const n = r.json?.nodes?.find((x: any) => x.nodeId === nodeId);
      return n?.lastHeartbeatAt ? n : null;
    }, 30_000, 500);
    assert.ok(node.lastSeq >= 1);
    const user = (await run(box, 'systemctl', ['show', '-p', 'User', '-p', 'ActiveState', 'steward-agent'])).stdout;
    assert.match(user, /User=steward/);
    assert.match(user, /ActiveState=active/);
    await stopServe();
    ran.push(`enroll + agent unit heartbeat (node ${nodeId})`);
  });

  await t.test('a second install changes nothing and says so', async () => {
    const before = (await run(box, 'systemctl', ['show', '-p', 'MainPID', 'steward-helper'])).stdout;
    const again = await run(box, '/usr/bin/node', [AGENTCTL, 'install', '--json'], 180_000);
    assert.equal(again.code, 0, again.text);
    assert.equal(again.json.changed, false, JSON.stringify(again.json.steps, null, 2));
    for (const s of again.json.steps) assert.ok(['unchanged', 'skipped'].includes(s.action), `${s.step}: ${s.action}`);
    assert.equal((await run(box, 'systemctl', ['show', '-p', 'MainPID', 'steward-helper'])).stdout, before, 'the helper was not restarted');
    const human = await run(box, '/usr/bin/node', [AGENTCTL, 'install'], 180_000);
    assert.match(human.stdout, /nothing to do: steward is installed and up to date/);
    ran.push('second install idempotent');
  });

  await t.test('uninstall keeps the state; install --no-start resumes it without starting; install starts it', async () => {
    const key = (await run(box, 'sha256sum', ['/var/lib/steward/keys/helper.key'])).stdout;
    // Through the launcher, as the README has it: agentctl removes /opt/steward/lib, its own code.
    const un = await run(box, '/usr/bin/env', [`PATH=${SUDO_PATH}`, 'agentctl', 'uninstall', '--json'], 120_000);
    assert.equal(un.code, 0, un.text);
    assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-helper'])).stdout.trim(), 'active');
    assert.equal((await run(box, 'test', ['-e', '/etc/systemd/system/steward-helper.service'])).code, 1);
    assert.equal((await run(box, 'test', ['-e', '/opt/steward/lib'])).code, 1);
    assert.equal((await run(box, 'test', ['-e', LAUNCHER])).code, 1, `${LAUNCHER} is removed`);
    assert.equal((await run(box, 'sha256sum', ['/var/lib/steward/keys/helper.key'])).stdout, key, 'the helper key is kept');
    assert.equal((await run(box, 'test', ['-f', '/var/lib/steward/state/node.json'])).code, 0, 'the enrollment is kept');
    const noStart = await run(box, '/usr/bin/node', [AGENTCTL, 'install', '--no-start', '--json'], 180_000);
    assert.equal(noStart.code, 0, noStart.text);
    const by = Object.fromEntries(noStart.json.steps.map((s: any) => [s.step, s.action]));
    assert.equal(by['helper key'], 'unchanged');
    assert.equal(by.config, 'unchanged');
    assert.equal(by.start, 'skipped');
    assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-helper'])).stdout.trim(), 'active');
    const start = await run(box, '/usr/bin/node', [AGENTCTL, 'install', '--json'], 180_000);
    assert.equal(start.code, 0, start.text);
    assert.equal(start.json.steps.find((s: any) => s.step === 'start').action, 'ran');
    assert.equal((await run(box, 'systemctl', ['is-active', 'steward-helper'])).stdout.trim(), 'active');
    ran.push('uninstall keeps state, install --no-start, install starts');
  });

  await t.test('uninstall as another user is refused and changes nothing', async () => {
    const r = await asSteward(box, ['/usr/bin/node', `${INSTALLED}/agentctl.js`, 'uninstall', '--purge']);
    assert.equal(r.code, 3, r.text);
    assert.match(r.stderr, /NEEDS_ROOT/);
    assert.equal((await run(box, 'systemctl', ['is-active', 'steward-helper'])).stdout.trim(), 'active');
    ran.push('non-root refused');
  });

  await t.test('uninstall --purge stops the units and removes everything install made', async () => {
    const r = await run(box, '/usr/bin/node', [AGENTCTL, 'uninstall', '--purge'], 120_000);
    console.log(`uninstall --purge:\n${r.stdout}${r.stderr}`);
    assert.equal(r.code, 0, r.text);
    assert.match(r.stderr, /PURGE/);
    assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-helper'])).stdout.trim(), 'active');
    assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-agent'])).stdout.trim(), 'active');
    const left = await sh(box, 'for p in "$@"; do [ -e "$p" ] && echo "$p"; done; true',
      '/opt/steward', '/etc/steward', '/var/lib/steward', '/var/lib/steward-agent', '/run/steward',
      '/etc/systemd/system/steward-helper.service', '/etc/systemd/system/steward-agent.service',
      '/etc/sysusers.d/steward.conf', '/etc/tmpfiles.d/steward.conf', LAUNCHER);
    assert.equal(left.stdout, '', `left behind:\n${left.stdout}`);
    const again = await run(box, '/usr/bin/node', [AGENTCTL, 'uninstall', '--purge', '--json']);
    assert.equal(again.code, 0, again.text);
    for (const s of again.json.steps) assert.ok(['absent', 'ran', 'skipped'].includes(s.action), `${s.step}: ${s.action}`);
    ran.push('uninstall --purge');
  });
});
