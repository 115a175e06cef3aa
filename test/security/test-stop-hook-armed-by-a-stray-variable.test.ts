// The test-only stop points (server/test-stop-points.ts) freeze a steward-control process at a
// named point. A stray STEWARD_CONTROL_TEST_STOP_AT in a production environment must not be
// able to do that: without STEWARD_CONTROL_TEST_HOOKS=1 beside it, serve refuses to start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from '../helpers/host.js';

function serve(db: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const args = [path.join(REPO, 'bin/steward-control.js'), '--db', db, 'serve', '--init', '--listen', '127.0.0.1:0'];
    // A serve that did start would never exit: the timeout ends it (and the test fails on its output).
    execFile(process.execPath, args, { env: { ...process.env, ...env }, timeout: 20_000 }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }));
  });
}

test('serve with STEWARD_CONTROL_TEST_STOP_AT but without STEWARD_CONTROL_TEST_HOOKS=1 refuses to start', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-stop-hook-'));
  try {
    for (const hooks of [undefined, '0', 'true']) {
      const r = await serve(path.join(dir, 'control.db'), { STEWARD_CONTROL_TEST_STOP_AT: 'issue-before', ...(hooks === undefined ? {} : { STEWARD_CONTROL_TEST_HOOKS: hooks }) });
      assert.equal(r.code, 2, `${hooks}: ${r.stderr}`);
      assert.match(r.stderr, /STEWARD_CONTROL_TEST_STOP_AT is a test hook/);
      assert.doesNotMatch(r.stdout, /listening on/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
