import { spawn, type ChildProcess } from 'node:child_process';
import type net from 'node:net';

// Who is at the other end of a Unix socket connection, as the kernel recorded it at connect(2)
// (SO_PEERCRED, socket(7)): nothing the client says can change it.
export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

export type PeerLookup = { ok: true; peer: PeerCredentials } | { ok: false; why: string };

const TIMEOUT_MS = 5_000;
// Node has no getsockopt. perl has, in its core Socket module, and perl-base is Essential on
// Debian and Ubuntu: it reads SO_PEERCRED on its stdin, which is the connection (the same open
// file, duplicated), and prints "pid uid gid". It reads nothing from the connection.
const PERL = 'use Socket; my $c = getsockopt(STDIN, SOL_SOCKET, SO_PEERCRED) or die "getsockopt SO_PEERCRED: $!\\n"; print join(" ", unpack("iII", $c)), "\\n";';

// The peer credentials of `socket`, a connection accepted on a Unix socket, or why there are
// none (no perl, the connection already closed). Never throws.
export function readPeerCredentials(socket: net.Socket): Promise<PeerLookup> {
  // Why the fd and not the socket itself as stdio: child_process stops reading a stream it is
  // given, and the request's upload may still be coming.
  const fd = (socket as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return Promise.resolve({ ok: false, why: 'the connection is closed' });
  return new Promise((resolve) => {
    let out = '';
    let err = '';
    let child: ChildProcess;
    try {
      child = spawn('perl', ['-e', PERL], { stdio: [fd, 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' }, timeout: TIMEOUT_MS });
    } catch (e) {
      return resolve({ ok: false, why: `cannot run perl: ${(e as Error).message}` });
    }
    // Both are pipes (stdio above).
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
    child.once('error', (e: NodeJS.ErrnoException) => resolve({ ok: false, why: `cannot run perl (${e.code ?? e.message})` }));
    child.once('close', (code, signal) => {
      const m = /^(\d+) (\d+) (\d+)\n$/.exec(out);
      if (code === 0 && m) return resolve({ ok: true, peer: { pid: Number(m[1]), uid: Number(m[2]), gid: Number(m[3]) } });
      resolve({ ok: false, why: `perl getsockopt failed (${signal ?? `exit ${code}`}): ${err.trim().slice(0, 200) || 'no output'}` });
    });
  });
}
