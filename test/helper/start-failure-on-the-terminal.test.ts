import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, BIN, IS_ROOT, type TestHost } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

// A helper that cannot start (bad config, unsafe root prefix, lock held, a file where a folder
// belongs) says why on its terminal in one line with the reason code, and no stack; agentctl,
// which then cannot reach it, says where to look (README, "Try it by hand").

interface Run {
  code: number | null;
  stderr: string;
}

// Runs steward-helper on `host` to its end, with steward's logs off (as an operator's DEBUG may be).
function runHelper(host: TestHost): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN.helper, '--root', host.root], { env: { ...process.env, DEBUG: '' }, timeout: 30_000 }, (err, _stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr });
    });
  });
}

// The helper exited 1 and its last stderr line is `steward-helper: <code>: <message>`; returns the message.
function reasonLine(r: Run, code: string): string {
  assert.equal(r.code, 1, r.stderr);
  assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
  const last = r.stderr.trimEnd().split('\n').pop() ?? '';
  const m = /^steward-helper: ([A-Z_]+): (.+)$/.exec(last);
  assert.ok(m, `last line: ${last}`);
  assert.equal(m[1], code, last);
  return m[2] as string;
}

test('a host config that is not JSON: one CONFIG_INVALID line naming the file', async (t) => {
  const host = useHost(t);
  writeFileSync(host.paths.configFile, '{"apps": {', { mode: 0o644 });
  const message = reasonLine(await runHelper(host), 'CONFIG_INVALID');
  assert.ok(message.startsWith(`${host.paths.configFile}: not valid JSON`), message);
});

test('a second helper for the same root: one HELPER_LOCKED line naming the lock', async (t) => {
  const host = useHost(t);
  const first = await host.startHelper();
  const message = reasonLine(await runHelper(host), 'HELPER_LOCKED');
  assert.match(message, new RegExp(`\\(pid ${first.child.pid}\\) holds ${host.paths.helperLock.replace(/[.]/g, '\\.')}$`));
});

test('a file where the layout needs a folder: one IO_ERROR line naming the path, not INTERNAL', async (t) => {
  const host = useHost(t);
  writeFileSync(path.join(host.root, 'run'), '');
  const message = reasonLine(await runHelper(host), 'IO_ERROR');
  assert.match(message, /^cannot start: EEXIST: .*mkdir '.*\/run'$/);
});

test('as root, a root prefix others can write: one ROOT_UNSAFE line naming it', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'the root prefix is checked only when the helper runs as root');
  const host = useHost(t);
  chmodSync(host.root, 0o777);
  const message = reasonLine(await runHelper(host), 'ROOT_UNSAFE');
  assert.match(message, new RegExp(`^root prefix ${host.root}: ${host.root} is writable by group or others`));
});

test('agentctl against a root whose helper is not running says how to see why it exited', async (t) => {
  const host = useHost(t);
  mkdirSync(path.dirname(host.paths.helperSock), { recursive: true });
  const r = await agentctl(host, ['status']);
  assert.equal(r.code, 5, r.stderr);
  const [first, hint] = r.stderr.trimEnd().split('\n');
  assert.equal(first, `agentctl: HELPER_UNREACHABLE: cannot reach the helper at ${host.paths.helperSock} (ENOENT) (tried helper.sock, since ${host.paths.adminSock} does not exist)`);
  assert.match(hint ?? '', /^ {2}is steward-helper running\? .*started by hand prints why it exited on its terminal \(run it in the foreground to see\)$/);
});
