import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { runTool, syncFileSystem } from '../../src/platform/exec.js';

const ENV = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' };

test('syncFileSystem syncs an existing folder and rejects a missing one', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-syncfs-'));
  try {
    await syncFileSystem(dir);
    await assert.rejects(syncFileSystem(path.join(dir, 'missing')), /sync -f .*missing failed/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('runTool gives the exit code and both outputs without their final newline, and never rejects', async () => {
  const r = await runTool('sh', ['-c', 'printf "a\\nb\\n"; echo err >&2; exit 3'], { env: ENV, timeoutMs: 10_000 });
  assert.deepEqual(r, { exitCode: 3, signal: null, stdout: 'a\nb', stderr: 'err', timedOut: false, failure: 'exit code 3' });
  const ok = await runTool('sh', ['-c', 'echo fine'], { env: ENV, timeoutMs: 10_000 });
  assert.deepEqual(ok, { exitCode: 0, signal: null, stdout: 'fine', stderr: '', timedOut: false, failure: null });
});

test('runTool passes only the environment it is given, no shell, and stdin at EOF', async () => {
  const r = await runTool('env', [], { env: { ONLY: 'this', PATH: '/usr/bin:/bin' }, timeoutMs: 10_000 });
  assert.deepEqual(r.stdout.split('\n').sort(), ['ONLY=this', 'PATH=/usr/bin:/bin']);
  // Not a shell: the argument is one word, not expanded.
  assert.equal((await runTool('echo', ['$HOME; x'], { env: ENV, timeoutMs: 10_000 })).stdout, '$HOME; x');
  // cat ends at once on an ended stdin.
  assert.equal((await runTool('cat', [], { env: ENV, timeoutMs: 10_000 })).exitCode, 0);
});

test('runTool kills a tool at its timeout, stops an output over maxBuffer, and says when a tool cannot run', async () => {
  const slow = await runTool('sleep', ['30'], { env: ENV, timeoutMs: 200 });
  assert.equal(slow.timedOut, true);
  assert.equal(slow.signal, 'SIGTERM');
  assert.equal(slow.failure, 'timed out after 200 ms');
  const loud = await runTool('sh', ['-c', 'head -c 100000 /dev/zero'], { env: ENV, timeoutMs: 10_000, maxBuffer: 1000 });
  assert.equal(loud.timedOut, false);
  assert.equal(loud.failure, 'its output went over 1000 bytes');
  const missing = await runTool('steward-no-such-tool', [], { env: ENV, timeoutMs: 10_000 });
  assert.equal(missing.exitCode, null);
  assert.match(missing.failure ?? '', /ENOENT/);
});
