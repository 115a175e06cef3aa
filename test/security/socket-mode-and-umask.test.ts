import assert from 'node:assert/strict';
import { linkSync, lstatSync, mkdtempSync, mkdirSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { startApiServer } from '../../src/helper/server/api-server.js';
import { openRunDir, prepareRunDir } from '../../src/helper/server/bind-sockets.js';
import { makeDispatch } from '../../src/helper/server/dispatch.js';
import { callHelper } from '../../src/protocol/client.js';
import { rejectsWithCode, testHandlers } from '../helpers/api-server-harness.js';

const mode = (p: string) => statSync(p).mode & 0o777;

test('sockets are bound private in a 0700 folder even under a permissive umask, then set 0600/0660 and the folder 0750', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-umask-'));
  const runDir = path.join(dir, 'run', 'steward');
  const settings = hostConfigSchema.parse({}).api;
  const dispatch = makeDispatch(testHandlers);
  // A umask that would make a plain bind world-connectable (socket 0777).
  const oldUmask = process.umask(0o000);
  try {
    await prepareRunDir(runDir);
    assert.equal(mode(runDir), 0o700);
    const admin = await startApiServer({ socketPath: path.join(runDir, 'admin.sock'), kind: 'admin', settings, dispatch });
    assert.equal(process.umask(), 0o000, 'the umask is restored after binding');
    const helper = await startApiServer({ socketPath: path.join(runDir, 'helper.sock'), kind: 'helper', settings, dispatch });
    // While both sockets exist, the folder is still root-only: nobody else can reach either.
    assert.equal(mode(runDir), 0o700);
    assert.equal(mode(path.join(runDir, 'admin.sock')), 0o600);
    assert.equal(mode(path.join(runDir, 'helper.sock')), 0o660);
    await openRunDir(runDir);
    assert.equal(mode(runDir), 0o750);
    assert.equal(statSync(path.join(runDir, 'helper.sock')).uid, process.getuid!());
    for (const s of [admin, helper]) {
      assert.deepEqual(await callHelper(s.socketPath, { v: 1, id: 1, op: 'status' }), { helper: 'up' });
      await s.close();
    }
  } finally {
    process.umask(oldUmask);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a stale socket file left by a killed helper is replaced', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-stale-'));
  const sock = path.join(dir, 'admin.sock');
  const settings = hostConfigSchema.parse({}).api;
  const dispatch = makeDispatch(testHandlers);
  try {
    const first = await startApiServer({ socketPath: sock, kind: 'admin', settings, dispatch });
    // Simulate a SIGKILL: the socket file stays and nobody listens (close() would unlink it,
    // so keep a second name for the inode and put it back).
    linkSync(sock, sock + '.keep');
    await first.close();
    renameSync(sock + '.keep', sock);
    assert.ok(lstatSync(sock).isSocket());
    const again = await startApiServer({ socketPath: sock, kind: 'admin', settings, dispatch });
    assert.deepEqual(await callHelper(sock, { v: 1, id: 1, op: 'status' }), { helper: 'up' });
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a run folder that is a symlink is refused', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-runlink-'));
  try {
    mkdirSync(path.join(dir, 'elsewhere'));
    symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'steward'));
    await rejectsWithCode(prepareRunDir(path.join(dir, 'steward')), 'ROOT_UNSAFE');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
