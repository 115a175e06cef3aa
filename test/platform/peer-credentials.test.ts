import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readPeerCredentials, type PeerLookup } from '../../src/platform/peer-credentials.js';

// A Unix socket server in a temp folder that looks up each connection's peer.
async function withServer(onPeer: (socket: net.Socket) => Promise<void>, run: (file: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-peer-'));
  const file = path.join(dir, 's.sock');
  const server = net.createServer((socket) => void onPeer(socket));
  await new Promise<void>((resolve) => server.listen(file, resolve));
  try {
    await run(file);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the peer of a connection is the process that connected, with its uid and gid, and the connection still reads', async () => {
  let got: PeerLookup | null = null;
  let after = '';
  await withServer(
    async (socket) => {
      got = await readPeerCredentials(socket);
      socket.setEncoding('utf8').on('data', (s: string) => (after += s));
      socket.on('end', () => socket.end('done\n'));
    },
    async (file) => {
      // A child connects, waits a moment, then writes: the lookup must not stop the server reading.
      const child = spawn(process.execPath, ['-e', `const s = require('net').createConnection(${JSON.stringify(file)}, () => setTimeout(() => s.end('late bytes'), 300)); s.resume();`], { stdio: 'ignore' });
      const code = await new Promise((resolve) => child.once('exit', resolve));
      assert.equal(code, 0);
      assert.deepEqual(got, { ok: true, peer: { pid: child.pid, uid: process.getuid?.(), gid: process.getgid?.() } });
      assert.equal(after, 'late bytes');
    },
  );
});

test('a connection already closed gives a reason, not a throw', async () => {
  let got: PeerLookup | null = null;
  await withServer(
    async (socket) => {
      socket.destroy();
      got = await readPeerCredentials(socket);
    },
    async (file) => {
      await new Promise<void>((resolve) => net.createConnection(file).once('close', () => resolve()).on('error', () => {}));
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(got, { ok: false, why: 'the connection is closed' });
    },
  );
});
