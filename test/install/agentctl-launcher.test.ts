import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installLauncher, launcherScript, removeLauncher } from '../../src/install/agentctl-launcher.js';
import { IS_ROOT } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

// `agentctl install` puts agentctl on the PATH as /usr/local/bin/agentctl, a sh launcher of the
// installed code; uninstall removes it. Here in a temp folder standing for /usr/local/bin (the
// container suite test/e2e/systemd/install.test.ts runs it at its real place, through the PATH).

// A root-owned folder for the launcher, or null (and the test skipped) when not root: install
// writes only into root-owned folders.
function binDir(t: TestContext): string | null {
  if (!IS_ROOT) {
    skipUnlessCI(t, 'install writes only into root-owned folders: needs root');
    return null;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-'));
  chmodSync(dir, 0o755);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('install writes a root-owned 0755 sh launcher that runs /opt/steward/lib/bin/agentctl.js with /usr/bin/node, and a second install changes nothing', async (t) => {
  const dir = binDir(t);
  if (!dir) return;
  const target = path.join(dir, 'agentctl');
  assert.deepEqual(await installLauncher(target), { action: 'created', detail: `${target} (runs /opt/steward/lib/bin/agentctl.js)` });
  const text = readFileSync(target, 'utf8');
  assert.ok(text.startsWith('#!/bin/sh\n'), text);
  assert.match(text, /^exec \/usr\/bin\/node \/opt\/steward\/lib\/bin\/agentctl\.js "\$@"$/m);
  const st = lstatSync(target);
  assert.equal(st.uid, 0);
  assert.equal(st.mode & 0o7777, 0o755);
  assert.equal((await installLauncher(target)).action, 'unchanged');
});

test('an older launcher of steward is rewritten; a mode someone loosened is put back', async (t) => {
  const dir = binDir(t);
  if (!dir) return;
  const target = path.join(dir, 'agentctl');
  const older = launcherScript().toString('utf8').replace('/usr/bin/node', '/usr/bin/node --some-old-flag');
  writeFileSync(target, older, { mode: 0o755 });
  assert.equal((await installLauncher(target)).action, 'updated');
  assert.deepEqual(readFileSync(target), launcherScript());
  chmodSync(target, 0o777);
  assert.equal((await installLauncher(target)).action, 'updated');
  assert.equal(lstatSync(target).mode & 0o7777, 0o755);
});

test('someone else\'s agentctl there (a symlink from npm link, a file) is left as it is by install and by uninstall', async (t) => {
  const dir = binDir(t);
  if (!dir) return;
  const link = path.join(dir, 'agentctl');
  symlinkSync('../lib/node_modules/steward/bin/agentctl.js', link);
  const installed = await installLauncher(link);
  assert.equal(installed.action, 'skipped');
  assert.match(installed.detail, /is a symlink to \.\.\/lib\/node_modules\/steward\/bin\/agentctl\.js \(npm link\?\): left as it is/);
  assert.equal(readlinkSync(link), '../lib/node_modules/steward/bin/agentctl.js');
  assert.equal((await removeLauncher(link)).action, 'skipped');
  assert.equal(readlinkSync(link), '../lib/node_modules/steward/bin/agentctl.js');

  rmSync(link);
  writeFileSync(link, '#!/bin/sh\necho another agentctl\n', { mode: 0o755 });
  assert.equal((await installLauncher(link)).action, 'skipped');
  assert.equal((await removeLauncher(link)).action, 'skipped');
  assert.equal(readFileSync(link, 'utf8'), '#!/bin/sh\necho another agentctl\n');
});

test('uninstall removes steward\'s launcher, and says absent when there is none', async (t) => {
  const dir = binDir(t);
  if (!dir) return;
  const target = path.join(dir, 'agentctl');
  await installLauncher(target);
  assert.deepEqual(await removeLauncher(target), { action: 'removed', detail: target });
  assert.equal(existsSync(target), false);
  assert.deepEqual(await removeLauncher(target), { action: 'absent', detail: target });
});

test('no launcher goes into a folder others can write: install skips it and says why', async (t) => {
  const dir = binDir(t);
  if (!dir) return;
  chmodSync(dir, 0o777);
  const target = path.join(dir, 'agentctl');
  const r = await installLauncher(target);
  assert.equal(r.action, 'skipped');
  assert.match(r.detail, /^refusing to write into .*: it must be a root-owned folder not writable by group or others \(uid 0, mode 777\); run \/opt\/steward\/lib\/bin\/agentctl\.js$/);
  assert.equal(existsSync(target), false);
});
