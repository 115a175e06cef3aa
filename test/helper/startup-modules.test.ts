import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { syncFileSystem } from '../../src/platform/exec.js';
import { REPO } from '../helpers/host.js';
import { modulesResolvedBy } from '../helpers/module-list.js';

// An idle helper's RSS is mostly what it loaded (issue 8 row 5): execa alone was ~100 modules and
// ~10 MB. The helper's module graph must not reach it; `sync -f` after a stage runs through
// node:child_process so that a stage does not load it for good either.
test("the helper's modules do not include execa", () => {
  const main = path.join(REPO, 'dist/src/helper/main.js');
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(main)})`]);
  assert.ok(modules.some((u) => u.endsWith('/helper/main.js')), `the hook saw the helper load:\n${stderr}`);
  assert.deepEqual(modules.filter((u) => u.includes('/node_modules/execa/')), []);
});

test('syncFileSystem syncs an existing folder and rejects a missing one', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-syncfs-'));
  try {
    await syncFileSystem(dir);
    await assert.rejects(syncFileSystem(path.join(dir, 'missing')), /sync -f .*missing failed/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
