import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { packagedUnit } from '../../scripts/package.js';
import { buildProgram } from '../../src/cli/program.js';
import { buildDeb, STEWARD_DEB } from '../helpers/deb-cache.js';
import { REPO } from '../helpers/host.js';
import { assertManPageClean, assertNoLintianError, has } from '../helpers/deb-read.js';
import { skipUnlessCI } from '../helpers/skip.js';

// `npm run package` (docs/design.md §14, docs/package.md): the .deb is built once here, then read with
// dpkg-deb as a reviewer reads it, and given to lintian.

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

test('the steward package holds the layout of docs/design.md §14, runs its own Node.js 24 and passes lintian', { timeout: 240_000 }, async (t) => {
  if (!has('dpkg-deb') || !has('strip')) return skipUnlessCI(t, 'dpkg-deb or strip (binutils) is not installed');
  const out = mkdtempSync(path.join(os.tmpdir(), 'steward-deb-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  // gzip -1 rather than xz: the same tree, built in seconds (scripts/package.ts).
  const { deb, version } = await buildDeb(STEWARD_DEB, REPO, out, { compression: 'gzip' });
  assert.equal(path.basename(deb), `steward_${version}_amd64.deb`);
  const lib = `usr/lib/steward/${version}`;

  await t.test('every entry is root:root, folders 0755, files 0644 or 0755', () => {
    const entries = sh('dpkg-deb', ['-c', deb]).trim().split('\n').map((l) => l.split(/\s+/));
    assert.ok(entries.length > 50, `${entries.length} entries`);
    for (const [mode, owner, , , , name] of entries) {
      assert.equal(owner, 'root/root', `${name} is ${owner}`);
      if (mode?.startsWith('d')) assert.equal(mode, 'drwxr-xr-x', `${name}`);
      else assert.ok(mode === '-rw-r--r--' || mode === '-rwxr-xr-x', `${name} is ${mode}`);
    }
    const byName = new Map(entries.map((e) => [(e[5] ?? '').replace(/^\.\//, ''), e[0]]));
    const expected: Array<[string, string]> = [
      ['usr/bin/agentctl', '-rwxr-xr-x'],
      [`${lib}/node/bin/node`, '-rwxr-xr-x'],
      [`${lib}/node/LICENSE`, '-rw-r--r--'],
      [`${lib}/bin/steward-helper.js`, '-rw-r--r--'],
      [`${lib}/dist/bundle/steward-helper/steward-helper.js`, '-rw-r--r--'],
      [`${lib}/dist/bundle/steward-agent/steward-agent.js`, '-rw-r--r--'],
      [`${lib}/dist/bundle/agentctl/agentctl.js`, '-rw-r--r--'],
      ['usr/lib/systemd/system/steward-helper.service', '-rw-r--r--'],
      ['usr/lib/systemd/system/steward-agent.service', '-rw-r--r--'],
      ['usr/lib/sysusers.d/steward.conf', '-rw-r--r--'],
      ['usr/lib/tmpfiles.d/steward.conf', '-rw-r--r--'],
      ['usr/share/doc/steward/copyright', '-rw-r--r--'],
      ['usr/share/doc/steward/changelog.gz', '-rw-r--r--'],
      ['usr/share/man/man1/agentctl.1.gz', '-rw-r--r--'],
      ['usr/share/man/man8/steward-helper.8.gz', '-rw-r--r--'],
      ['usr/share/man/man8/steward-agent.8.gz', '-rw-r--r--'],
      ['usr/share/bash-completion/completions/agentctl', '-rw-r--r--'],
    ];
    for (const [name, mode] of expected) assert.equal(byName.get(name), mode, `${name}`);
    // steward-control runs elsewhere: not in the host's package.
    assert.ok(![...byName.keys()].some((n) => n.includes('steward-control')), 'no steward-control in steward');
  });

  await t.test('the control file names the package, its version, Depends and Installed-Size, and the maintainer scripts are POSIX sh with set -e', () => {
    const info = sh('dpkg-deb', ['-f', deb, 'Package', 'Version', 'Architecture', 'Depends', 'Installed-Size']);
    assert.match(info, /^Package: steward$/m);
    assert.match(info, new RegExp(`^Version: ${version.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(info, /^Architecture: amd64$/m);
    assert.match(info, /^Depends: .*\bsystemd\b/m);
    assert.match(info, /^Installed-Size: [1-9][0-9]{4,}$/m);
    const control = mkdtempSync(path.join(out, 'control-'));
    sh('dpkg-deb', ['-e', deb, control]);
    for (const script of ['postinst', 'prerm', 'postrm']) {
      const text = readFileSync(path.join(control, script), 'utf8');
      assert.match(text, /^#!\/bin\/sh\n/, script);
      assert.match(text, /^set -e$/m, script);
      assert.equal(spawnSync('sh', ['-n', path.join(control, script)]).status, 0, `${script} parses`);
    }
    const postinst = readFileSync(path.join(control, 'postinst'), 'utf8');
    assert.match(postinst, /^agentctl\(\) \{ NODE_DISABLE_COMPILE_CACHE=1 \/usr\/bin\/agentctl "\$@"; \}$/m);
    assert.match(postinst, /^\tagentctl install --packaged$/m);
    // purge keeps the apps' own data.
    const postrm = readFileSync(path.join(control, 'postrm'), 'utf8');
    const rm = postrm.split('\n').find((l) => l.trim().startsWith('rm -rf ')) ?? '';
    assert.deepEqual(rm.trim().split(/\s+/).slice(2).sort(), ['/etc/steward', '/opt/steward', '/run/steward', '/var/lib/steward', '/var/lib/steward-agent', '/var/log/steward']);
  });

  const x = mkdtempSync(path.join(out, 'x-'));
  sh('dpkg-deb', ['-x', deb, x]);
  const node = path.join(x, lib, 'node/bin/node');

  await t.test('the packaged Node.js is 24 and runs the packaged programs; the units and agentctl run it', () => {
    assert.match(sh(node, ['--version']), /^v24\./);
    assert.equal(sh(node, [path.join(x, lib, 'bin/agentctl.js'), '--version']).trim(), version);
    assert.equal(sh(node, [path.join(x, lib, 'bin/steward-helper.js'), '--version']).trim(), version);
    for (const unit of ['steward-helper.service', 'steward-agent.service']) {
      const text = readFileSync(path.join(x, 'usr/lib/systemd/system', unit), 'utf8');
      // The helper's unit runs the launcher, which runs the packaged Node.js (docs/self-update.md).
      if (unit === 'steward-helper.service') {
        assert.match(text, new RegExp(`^ExecStart=/bin/sh /${lib}/systemd/steward-launcher$`, 'm'), unit);
        assert.match(text, /^Type=notify\nNotifyAccess=all\nTimeoutStartSec=300$/m, unit);
      } else {
        assert.match(text, new RegExp(`^ExecStart=/${lib}/node/bin/node `, 'm'), unit);
        // The agent's start never waits for the helper's readiness, which a trial gives only
        // after the agent's confirm (test/package/fleet-self-rollout.test.ts, the apt upgrade).
        assert.doesNotMatch(text, /^(After|Requires|BindsTo|Requisite)=.*steward-helper/m, unit);
      }
      assert.ok(!/^[^#].*\/usr\/bin\/node/m.test(text), `${unit} runs no /usr/bin/node`);
      assert.ok(!/^[^#].*\/opt\/steward\/lib/m.test(text), `${unit} names no /opt/steward/lib`);
    }
    assert.match(readFileSync(path.join(x, 'usr/bin/agentctl'), 'utf8'), new RegExp(`^exec /${lib}/node/bin/node /${lib}/bin/agentctl\\.js "\\$@"$`, 'm'));
    // The shipped bash completion is what the packaged agentctl prints.
    assert.equal(readFileSync(path.join(x, 'usr/share/bash-completion/completions/agentctl'), 'utf8'), sh(node, [path.join(x, lib, 'bin/agentctl.js'), 'completion', 'bash']));
  });

  await t.test('the agentctl man page has every command and option that --help lists', async () => {
    const page = gunzipSync(readFileSync(path.join(x, 'usr/share/man/man1/agentctl.1.gz'))).toString();
    assert.match(page, /^\.TH AGENTCTL 1 /m);
    const program = await buildProgram();
    const help = program.createHelp();
    const roff = (s: string) => s.replace(/-/g, '\\-');
    for (const cmd of help.visibleCommands(program).filter((c) => c.name() !== 'help')) {
      assert.ok(page.includes(`.SS "agentctl ${roff(cmd.name())}`), `the page has agentctl ${cmd.name()}`);
      for (const o of help.visibleOptions(cmd)) {
        if (o.long && o.long !== '--help') assert.ok(page.includes(roff(o.long)), `the page has agentctl ${cmd.name()} ${o.long}`);
      }
    }
    assertManPageClean(path.join(x, 'usr/share/man/man1/agentctl.1.gz'));
  });

  await t.test('lintian reports no error', (tt) => assertNoLintianError(tt, deb));
});

test('a unit whose ExecStart no longer runs /usr/bin/node fails the package build instead of shipping it', () => {
  const unit = '[Service]\nExecStart=/usr/local/bin/node /opt/steward/lib/bin/steward-helper.js\nDocumentation=file:/opt/steward/lib/README.md\n';
  assert.throws(() => packagedUnit('steward-helper.service', unit, '/usr/lib/steward/1.0.0'), /no longer has/);
});

test('a unit that still names /opt/steward/lib outside a comment fails the package build', () => {
  const unit = 'Documentation=file:/opt/steward/lib/README.md\nExecStart=/usr/bin/node /opt/steward/lib/bin/steward-helper.js\nEnvironment=CODE=/opt/steward/lib\n';
  assert.throws(() => packagedUnit('steward-helper.service', unit, '/usr/lib/steward/1.0.0'), /still names \/opt\/steward\/lib: Environment=CODE/);
});
