// `steward-control --help | head -1`: a reader that goes away before the program has printed all
// it has. The program ends quietly, as one killed by SIGPIPE would, never with a stack trace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO } from '../helpers/host.js';

function runWithStdoutClosed(bin: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(REPO, 'bin', bin), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    // Our end of its stdout is closed before it starts: its first write fails with EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

for (const bin of ['steward-control.js', 'agentctl.js']) {
  test(`${bin.replace('.js', '')} --help into a pipe nobody reads ends with 0 and prints no error`, async () => {
    const r = await runWithStdoutClosed(bin, ['--help']);
    assert.equal(r.stderr, '');
    assert.equal(r.code, 0);
  });
}
