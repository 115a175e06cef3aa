import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { artifactPath, artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';

// A client that hangs up in the middle of `GET /v1/artifacts/...` must not leave the tarball
// open on the server: with the file handle left to the garbage collector, a client aborting
// downloads in a loop holds one descriptor each until the control plane runs out (EMFILE).
// steward-control runs as its own process here: an idle server has no garbage collection to
// hide the leak, as this test process (which allocates) would.

// The server's open descriptors on the file `file`.
function openOn(pid: number, file: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target === file) out.push(`fd ${fd}`);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

// Starts a download, reads its first chunk, then destroys the connection.
function abortAfterFirstChunk(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      assert.equal(res.statusCode, 200);
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(err)));
  });
}

// Polls for up to 2 s until nothing is open (the server sees a hang-up a few event-loop turns
// later) and returns what is still open then.
async function waitForNone(pid: number, file: string): Promise<string[]> {
  const deadline = Date.now() + 2000;
  for (;;) {
    const left = openOn(pid, file);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('downloads aborted mid-stream leave no artifact file open on steward-control', { skip: process.platform !== 'linux' && 'reads /proc/<pid>/fd' }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-artifacts-'));
  const db = path.join(dir, 'control.db');
  const control = await startControlDaemon(db, 0);
  try {
    const keys = await controlCli(db, ['keys', 'create', '--out', path.join(dir, 'keys'), '--json']);
    assert.equal(keys.code, 0, keys.stderr);
    // Far larger than what loopback socket buffers absorb: the server is still streaming when the
    // client hangs up.
    const size = 32 * 1024 * 1024;
    writeFileSync(path.join(dir, 'web.tgz'), Buffer.alloc(size, 7));
    const add = await controlCli(db, ['release', 'add', 'web', '1.0.0', '--file', path.join(dir, 'web.tgz'), '--base-url', control.url, '--key', keys.json.privateKeyFile]);
    assert.equal(add.code, 0, add.stderr);
    const url = `${control.url}/v1/artifacts/web/1.0.0.tgz`;
    const pid = control.child.pid as number;
    const file = artifactPath(artifactsDirOf(db), 'web', '1.0.0');
    // The check sees an open download (so it can see a leaked one).
    const open = await new Promise<string[]>((resolve) => {
      const req = http.get(url, (res) => res.once('data', () => {
        resolve(openOn(pid, file));
        req.destroy();
      }));
      req.on('error', () => undefined);
    });
    assert.equal(open.length, 1, 'the server holds the artifact open while it streams it');
    assert.deepEqual(await waitForNone(pid, file), []);
    for (let i = 0; i < 10; i++) await abortAfterFirstChunk(url);
    assert.deepEqual(await waitForNone(pid, file), [], 'descriptors left open on the artifact after 10 aborted downloads');
    // A whole download still works, and closes its file.
    const full = await fetch(url);
    assert.equal((await full.arrayBuffer()).byteLength, size);
    assert.deepEqual(await waitForNone(pid, file), []);
  } finally {
    await control.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
