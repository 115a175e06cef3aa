import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { BIN, IS_ROOT } from '../helpers/host.js';
import { execFile } from 'node:child_process';

// docs/design.md §8: a usage mistake exits 2 before anything is sent, whatever the helper would say; an
// unreachable helper exits 5 naming the socket tried and why that one. No helper runs here.

const base = mkdtempSync(path.join(os.tmpdir(), 'steward-usage-'));
const root = path.join(base, 'root');
const tgz = path.join(base, 'web.tgz');
writeFileSync(tgz, 'not really a tarball');
after(() => rmSync(base, { recursive: true, force: true }));

function agentctl(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN.agentctl, ...args], { env: { ...process.env, STEWARD_ROOT: undefined, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

const INTEGRITY = `sha512-${'A'.repeat(86)}==`;
const MISTAKES: string[][] = [
  ['status', 'Web'],
  ['releases', 'a b'],
  ['receipts', '../etc'],
  ['start', '-x-'],
  ['stop', 'WEB'],
  ['release-hold', 'web/'],
  ['prune', 'web', '--keep', '1'],
  ['prune', 'web', '--keep', '101'],
  ['prune', 'web', '--keep', '2.5'],
  ['rollback', 'web', '--to', '1.x'],
  ['rollback', 'web', '--attempt-id', '.hidden'],
  ['recover', 'web', '--to', 'v1.0.0'],
  ['update', 'web', '1.x', '--file', tgz, '--integrity', INTEGRITY, '--allow-unsigned'],
  ['update', 'web', '1.0.0+build', '--file', tgz, '--integrity', INTEGRITY, '--allow-unsigned'],
  ['update', 'web', '1.0.0', '--file', tgz, '--allow-unsigned'],
  ['update', 'web', '1.0.0', '--integrity', INTEGRITY, '--allow-unsigned'],
  ['update', 'web', '1.0.0', '--file', tgz, '--integrity', 'sha256-abc', '--allow-unsigned'],
  ['update', 'web', '1.0.0', '--file', tgz, '--integrity', INTEGRITY, '--allow-unsigned', '--attempt-id', 'a b'],
  ['stage', 'web', '01.2.3', '--file', tgz, '--integrity', INTEGRITY, '--allow-unsigned'],
  ['update', 'web', '1.0.0'],
  ['update', 'web'],
  ['status', '--no-such-flag'],
  ['enroll', '--control-plane', 'ftp://cp.example', '--token', 'secret-token-0123'],
];

test('every usage mistake exits 2 and says USAGE, in text and in --json, without reaching a helper', async () => {
  for (const args of MISTAKES) {
    const r = await agentctl(['--root', root, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /HELPER_UNREACHABLE/, args.join(' '));
    const j = await agentctl(['--root', root, '--json', ...args]);
    assert.equal(j.code, 2, args.join(' '));
    assert.equal(JSON.parse(j.stdout).error.code, 'USAGE', `${args.join(' ')}: ${j.stdout}`);
  }
});

test('an unreachable helper exits 5 naming the socket tried under --root and why that one', async () => {
  const r = await agentctl(['--root', root, 'status']);
  assert.equal(r.code, 5, r.stderr);
  const sock = path.join(root, 'run/steward/helper.sock');
  assert.ok(r.stderr.includes(`cannot reach the helper at ${sock} (ENOENT)`), r.stderr);
  assert.ok(r.stderr.includes(`tried helper.sock, since ${path.join(root, 'run/steward/admin.sock')} does not exist`), r.stderr);
  const given = path.join(base, 'elsewhere.sock');
  const s = await agentctl(['--root', root, '--socket', given, 'status']);
  assert.equal(s.code, 5, s.stderr);
  assert.ok(s.stderr.includes(`${given} (ENOENT) (tried the socket given with --socket)`), s.stderr);
});

test('STEWARD_ROOT is ignored for root with a note on stderr, and named as the prefix for anyone else', async () => {
  const r = await agentctl(['status'], { STEWARD_ROOT: root });
  assert.equal(r.code, 5, r.stderr);
  if (IS_ROOT) {
    assert.match(r.stderr, new RegExp(`^agentctl: note: STEWARD_ROOT=${root} is ignored for root .*--root ${root}`, 'm'));
    // The note says the rule itself: a host has no design document to look a section up in.
    assert.match(r.stderr, /root names a root prefix with --root only/);
    assert.doesNotMatch(r.stderr, /design|§/i);
    assert.ok(!r.stderr.includes(path.join(root, 'run')), 'root did not use the prefix');
  } else {
    assert.ok(r.stderr.includes(`root prefix ${root} from STEWARD_ROOT`), r.stderr);
    assert.doesNotMatch(r.stderr, /is ignored/);
  }
});
