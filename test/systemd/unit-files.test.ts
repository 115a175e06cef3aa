import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, IS_ROOT } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { packagedUnit } from '../../scripts/package.js';

// The files of systemd/ are valid for systemd 252: `systemd-analyze verify` accepts each unit
// with no warning, and sysusers.d/tmpfiles.d make the user, group, folders and modes of docs/design.md §2
// inside a temp root (--root). Under CI a missing systemd tool is a failure, not a skip.

const UNITS = ['steward-helper.service', 'steward-agent.service'];
const ANALYZE = '/usr/bin/systemd-analyze';

function run(file: string, args: string[], cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

function skipReason(bin: string): string | null {
  if (existsSync(bin)) return null;
  const reason = `${bin} is missing (apt-get install -y systemd)`;
  if (process.env.CI === 'true') throw new Error(`CI must verify the unit files, but ${reason}`);
  return reason;
}

for (const unit of UNITS) {
  test(`systemd-analyze verify accepts ${unit} without a warning`, async (t) => {
    const reason = skipReason(ANALYZE);
    if (reason) return skipUnlessCI(t, reason);
    // The unit's ExecStart is /usr/bin/node (verify checks it exists); its script argument is the
    // installed path, which verify does not check. A copy in a temp folder keeps the file name.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-units-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const copy = path.join(dir, unit);
    const text = readFileSync(path.join(REPO, 'systemd', unit), 'utf8');
    writeFileSync(copy, text);
    const r = await run(ANALYZE, ['verify', '--man=no', copy], dir);
    assert.equal(r.code, 0, `systemd-analyze verify ${unit}: ${r.stderr}`);
    assert.equal(r.stderr.trim(), '', `warnings from systemd-analyze verify ${unit}:\n${r.stderr}`);
  });
}

test('sysusers.d and tmpfiles.d make the steward user and the folders of docs/design.md §2 with their modes', async (t) => {
  const reason = skipReason('/usr/bin/systemd-sysusers') ?? skipReason('/usr/bin/systemd-tmpfiles') ?? (IS_ROOT ? null : 'chown to steward in a temp root needs root');
  if (reason) return skipUnlessCI(t, reason);
  const root = mkdtempSync(path.join(os.tmpdir(), 'steward-tmpfiles-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, 'etc'));
  const su = await run('/usr/bin/systemd-sysusers', [`--root=${root}`, path.join(REPO, 'systemd/sysusers.d/steward.conf')]);
  assert.equal(su.code, 0, su.stderr);
  const passwd = readFileSync(path.join(root, 'etc/passwd'), 'utf8');
  const line = passwd.split('\n').find((l) => l.startsWith('steward:'));
  assert.ok(line, `no steward user in ${passwd}`);
  const [, , uid, gid, , home, shell] = line.split(':');
  assert.ok(Number(uid) > 0 && Number(uid) < 1000, `a system uid, got ${uid}`);
  assert.equal(shell, '/usr/sbin/nologin');
  assert.equal(home, '/var/lib/steward-agent');
  const group = readFileSync(path.join(root, 'etc/group'), 'utf8');
  assert.match(group, new RegExp(`^steward:x:${gid}:`, 'm'));

  const tf = await run('/usr/bin/systemd-tmpfiles', [`--root=${root}`, '--create', path.join(REPO, 'systemd/tmpfiles.d/steward.conf')]);
  assert.equal(tf.code, 0, tf.stderr);
  const want: Array<[string, number, 'root' | 'steward', 'root' | 'steward']> = [
    ['/etc/steward', 0o755, 'root', 'root'],
    ['/etc/steward/trusted-keys', 0o755, 'root', 'root'],
    ['/opt/steward/apps', 0o755, 'root', 'root'],
    ['/var/lib/steward', 0o755, 'root', 'root'],
    ['/var/lib/steward/journal', 0o700, 'root', 'root'],
    ['/var/lib/steward/state', 0o700, 'root', 'root'],
    ['/var/lib/steward/supervisor', 0o700, 'root', 'root'],
    ['/var/lib/steward/keys', 0o700, 'root', 'root'],
    ['/var/lib/steward/receipts', 0o750, 'root', 'steward'],
    ['/var/lib/steward-agent', 0o700, 'steward', 'steward'],
    ['/var/log/steward', 0o750, 'root', 'root'],
    ['/run/steward', 0o750, 'root', 'steward'],
  ];
  const ids = { root: 0, steward: Number(uid) };
  const gids = { root: 0, steward: Number(gid) };
  for (const [p, mode, owner, grp] of want) {
    const st = statSync(path.join(root, p));
    assert.equal((st.mode & 0o7777).toString(8), mode.toString(8), `mode of ${p}`);
    assert.equal(st.uid, ids[owner], `owner of ${p}`);
    assert.equal(st.gid, gids[grp], `group of ${p}`);
  }
});

test("the package's helper unit has WatchdogSec, so that systemd restarts a helper whose event loop is stuck", () => {
  const text = packagedUnit('steward-helper.service', readFileSync(path.join(REPO, 'systemd/steward-helper.service'), 'utf8'), '/usr/lib/steward/1.0.0');
  const service = text.slice(text.indexOf('[Service]'));
  assert.match(service, /^WatchdogSec=60$/m);
  assert.match(service, /^Type=notify$/m, 'the pings go through the notify socket');
});
