import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Command } from 'commander';
import { AddonNotBuilt } from '../../scripts/package/sqlite-addon.js';
import { buildControlProgram } from '../../src/control/cli/main.js';
import { buildDeb, CONTROL_DEB } from '../helpers/deb-cache.js';
import { REPO } from '../helpers/host.js';
import { assertManPageClean, assertNoLintianError, has } from '../helpers/deb-read.js';
import { skipUnlessCI } from '../helpers/skip.js';

// steward-control's package (docs/design.md §14, docs/package.md), built once here with the cached
// better-sqlite3 for its Node.js (.ci/run builds that cache before the suite), then read with
// dpkg-deb and given to lintian.

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

// Every visible command below `cmd`, with its words after the program's name.
function commandsOf(cmd: Command, prefix: string[] = []): Array<[string[], Command]> {
  const help = cmd.createHelp();
  return help.visibleCommands(cmd).filter((c) => c.name() !== 'help').flatMap((c) => [[[...prefix, c.name()], c] as [string[], Command], ...commandsOf(c, [...prefix, c.name()])]);
}

test('the steward-control package holds its bundle, better-sqlite3 for its own Node.js 24, its unit and settings, and passes lintian', { timeout: 240_000 }, async (t) => {
  if (!has('dpkg-deb') || !has('strip')) return skipUnlessCI(t, 'dpkg-deb or strip (binutils) is not installed');
  const out = mkdtempSync(path.join(os.tmpdir(), 'steward-control-deb-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  let built;
  try {
    // gzip -1 rather than xz: the same tree, built in seconds (scripts/package/deb.ts).
    built = await buildDeb(CONTROL_DEB, REPO, out, { compression: 'gzip' });
  } catch (err) {
    if (err instanceof AddonNotBuilt) return skipUnlessCI(t, err.message);
    throw err;
  }
  const { deb, version } = built;
  assert.equal(path.basename(deb), `steward-control_${version}_amd64.deb`);
  const lib = `usr/lib/steward-control/${version}`;

  await t.test('every entry is root:root, folders 0755, files 0644 or 0755, in the layout of docs/package.md', () => {
    const entries = sh('dpkg-deb', ['-c', deb]).trim().split('\n').map((l) => l.split(/\s+/));
    for (const [mode, owner, , , , name] of entries) {
      assert.equal(owner, 'root/root', `${name} is ${owner}`);
      if (mode?.startsWith('d')) assert.equal(mode, 'drwxr-xr-x', `${name}`);
      else assert.ok(mode === '-rw-r--r--' || mode === '-rwxr-xr-x', `${name} is ${mode}`);
    }
    const byName = new Map(entries.map((e) => [(e[5] ?? '').replace(/^\.\//, ''), e[0]]));
    const expected: Array<[string, string]> = [
      ['usr/bin/steward-control', '-rwxr-xr-x'],
      [`${lib}/node/bin/node`, '-rwxr-xr-x'],
      [`${lib}/node/LICENSE`, '-rw-r--r--'],
      [`${lib}/package.json`, '-rw-r--r--'],
      [`${lib}/bin/steward-control.js`, '-rw-r--r--'],
      [`${lib}/dist/bundle/steward-control/steward-control.js`, '-rw-r--r--'],
      [`${lib}/dist/bundle/steward-control/ui/index.html`, '-rw-r--r--'],
      [`${lib}/node_modules/better-sqlite3/build/Release/better_sqlite3.node`, '-rw-r--r--'],
      [`${lib}/node_modules/better-sqlite3/lib/index.js`, '-rw-r--r--'],
      [`${lib}/node_modules/bindings/bindings.js`, '-rw-r--r--'],
      [`${lib}/node_modules/file-uri-to-path/index.js`, '-rw-r--r--'],
      ['usr/lib/systemd/system/steward-control.service', '-rw-r--r--'],
      ['usr/lib/sysusers.d/steward-control.conf', '-rw-r--r--'],
      ['usr/lib/tmpfiles.d/steward-control.conf', '-rw-r--r--'],
      ['etc/steward-control/steward-control.conf', '-rw-r--r--'],
      ['usr/share/man/man1/steward-control.1.gz', '-rw-r--r--'],
      ['usr/share/doc/steward-control/copyright', '-rw-r--r--'],
      ['usr/share/doc/steward-control/changelog.gz', '-rw-r--r--'],
      ['usr/share/doc/steward-control/README.md.gz', '-rw-r--r--'],
      // The design the docs cite by section travels with them.
      ['usr/share/doc/steward-control/docs/design.md.gz', '-rw-r--r--'],
    ];
    for (const [name, mode] of expected) assert.equal(byName.get(name), mode, `${name}`);
    // The host's programs are the steward package's.
    const host = [...byName.keys()].filter((n) => /steward-(helper|agent)|agentctl/.test(n));
    assert.deepEqual(host, [], 'no host program in steward-control');
  });

  await t.test('the control file, the conffile, and maintainer scripts that init the database as its user and purge only its state', () => {
    const info = sh('dpkg-deb', ['-f', deb, 'Package', 'Version', 'Architecture', 'Depends']);
    assert.match(info, /^Package: steward-control$/m);
    assert.match(info, new RegExp(`^Version: ${version.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(info, /^Architecture: amd64$/m);
    assert.match(info, /^Depends: .*\blibstdc\+\+6\b.*\bsystemd\b/m);
    const control = mkdtempSync(path.join(out, 'control-'));
    sh('dpkg-deb', ['-e', deb, control]);
    assert.equal(readFileSync(path.join(control, 'conffiles'), 'utf8'), '/etc/steward-control/steward-control.conf\n');
    for (const script of ['postinst', 'prerm', 'postrm']) {
      const text = readFileSync(path.join(control, script), 'utf8');
      assert.match(text, /^#!\/bin\/sh\n/, script);
      assert.match(text, /^set -e$/m, script);
      assert.equal(spawnSync('sh', ['-n', path.join(control, script)]).status, 0, `${script} parses`);
    }
    const postinst = readFileSync(path.join(control, 'postinst'), 'utf8');
    assert.match(postinst, /exec setpriv --reuid=steward-control --regid=steward-control --init-groups steward-control init\)$/m);
    assert.match(postinst, /deb-systemd-invoke restart steward-control\.service/);
    const rm = readFileSync(path.join(control, 'postrm'), 'utf8').split('\n').find((l) => l.trim().startsWith('rm -rf ')) ?? '';
    assert.deepEqual(rm.trim().split(/\s+/).slice(2).sort(), ['/etc/steward-control', '/var/lib/steward-control']);
  });

  const x = mkdtempSync(path.join(out, 'x-'));
  sh('dpkg-deb', ['-x', deb, x]);
  const node = path.join(x, lib, 'node/bin/node');
  const control = path.join(x, lib, 'bin/steward-control.js');

  await t.test('the packaged Node.js is 24 and runs the packaged steward-control on a database; the unit and /usr/bin/steward-control run it', () => {
    assert.match(sh(node, ['--version']), /^v24\./);
    assert.equal(sh(node, [control, '--version']).trim(), version);
    // better-sqlite3 loads under the packaged node: a database is made and read.
    const db = path.join(out, 'probe.db');
    sh(node, [control, '--db', db, 'init']);
    assert.deepEqual(JSON.parse(sh(node, [control, '--db', db, '--json', 'nodes'])), { nodes: [] });
    assert.match(readFileSync(path.join(x, 'usr/bin/steward-control'), 'utf8'), new RegExp(`^exec /${lib}/node/bin/node /${lib}/bin/steward-control\\.js "\\$@"$`, 'm'));
    const unit = readFileSync(path.join(x, 'usr/lib/systemd/system/steward-control.service'), 'utf8');
    for (const line of ['User=steward-control', 'StateDirectory=steward-control', 'EnvironmentFile=/etc/steward-control/steward-control.conf', 'ExecStart=/usr/bin/steward-control serve $STEWARD_CONTROL_OPTIONS', 'ProtectSystem=strict', 'NoNewPrivileges=yes', 'WantedBy=multi-user.target']) {
      assert.ok(unit.split('\n').includes(line), `the unit has ${line}`);
    }
    // The settings name a database in the unit's StateDirectory and serve options it takes.
    const conf = readFileSync(path.join(x, 'etc/steward-control/steward-control.conf'), 'utf8');
    assert.match(conf, /^STEWARD_CONTROL_DB=\/var\/lib\/steward-control\/control\.db$/m);
    assert.match(conf, /^STEWARD_CONTROL_OPTIONS="--listen 127\.0\.0\.1:\d+ /m);
    assert.match(readFileSync(path.join(x, 'usr/lib/sysusers.d/steward-control.conf'), 'utf8'), /^u steward-control /m);
  });

  await t.test('the man page has every command and option that --help lists, at every depth', async () => {
    const page = gunzipSync(readFileSync(path.join(x, 'usr/share/man/man1/steward-control.1.gz'))).toString();
    assert.match(page, /^\.TH STEWARD-CONTROL 1 /m);
    const roff = (s: string) => s.replace(/-/g, '\\-');
    const commands = commandsOf(await buildControlProgram());
    assert.ok(commands.some(([words]) => words.join(' ') === 'rollout start'), 'rollout start is there');
    for (const [words, cmd] of commands) {
      assert.ok(page.includes(`.SS "steward\\-control ${roff(words.join(' '))}`), `the page has steward-control ${words.join(' ')}`);
      for (const o of cmd.createHelp().visibleOptions(cmd)) {
        if (o.long && o.long !== '--help') assert.ok(page.includes(roff(o.long)), `the page has steward-control ${words.join(' ')} ${o.long}`);
      }
    }
    assertManPageClean(path.join(x, 'usr/share/man/man1/steward-control.1.gz'));
  });

  await t.test('lintian reports no error', (tt) => assertNoLintianError(tt, deb));
});
