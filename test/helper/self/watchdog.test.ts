import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { makeHost, startHelper } from '../../helpers/host.js';
import { skipUnlessCI } from '../../helpers/skip.js';

// The helper under a unit with WatchdogSec (docs/design.md §14, docs/self-update.md): once ready it sends
// WATCHDOG=1 on $NOTIFY_SOCKET at half of $WATCHDOG_USEC, from its own event loop; without
// WATCHDOG_USEC it sends READY=1 alone. The socket is a fake: a unix datagram socket that perl
// (perl-base is Essential on Debian) binds and prints each message of, one a line.

const RECEIVER = `
use Socket;
my $path = shift;
socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
unlink $path;
bind($s, pack_sockaddr_un($path)) or die "bind: $!";
$| = 1;
print "BOUND\\n";
while (defined(recv($s, my $buf, 4096, 0))) { $buf =~ s/\\n/ /g; print "$buf\\n"; }
`;

interface Receiver {
  socket: string;
  lines: () => string[];
  child: ChildProcess;
}

async function receiver(dir: string): Promise<Receiver> {
  const socket = path.join(dir, 'notify.sock');
  const child = spawn('perl', ['-e', RECEIVER, socket], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  await waitFor('the fake notify socket', () => out.includes('BOUND\n'));
  return { socket, child, lines: () => out.split('\n').filter((l) => l && l !== 'BOUND') };
}

async function waitFor(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a ready helper sends WATCHDOG=1 on NOTIFY_SOCKET when WATCHDOG_USEC is set, and no WATCHDOG=1 when it is not', { timeout: 120_000 }, async (t) => {
  if (!existsSync('/usr/bin/systemd-notify')) return skipUnlessCI(t, 'needs systemd-notify (apt-get install -y systemd)');
  const host = makeHost({ apps: {} });
  t.after(() => host.cleanup());
  const on = await receiver(host.scratch);
  t.after(() => on.child.kill());
  const started = Date.now();
  // 400 ms: a ping every 200 ms.
  const watched = await startHelper(host, { NOTIFY_SOCKET: on.socket, WATCHDOG_USEC: '400000', WATCHDOG_PID: '' });
  await waitFor('two WATCHDOG=1', () => on.lines().filter((l) => /\bWATCHDOG=1\b/.test(l)).length >= 2);
  const took = Date.now() - started;
  assert.match(on.lines()[0] ?? '', /\bREADY=1\b/, `READY=1 first: ${on.lines().join(' | ')}`);
  assert.equal(await watched.stop(), 0);

  // The same helper without WATCHDOG_USEC, for as long as the first took to send two.
  const offDir = path.join(host.scratch, 'off');
  mkdirSync(offDir);
  const off = await receiver(offDir);
  t.after(() => off.child.kill());
  const plain = await startHelper(host, { NOTIFY_SOCKET: off.socket, WATCHDOG_USEC: '' });
  await waitFor('READY=1', () => off.lines().some((l) => /\bREADY=1\b/.test(l)));
  await new Promise((r) => setTimeout(r, took));
  assert.equal(await plain.stop(), 0);
  assert.ok(!off.lines().some((l) => /\bWATCHDOG=/.test(l)), off.lines().join(' | '));
});
