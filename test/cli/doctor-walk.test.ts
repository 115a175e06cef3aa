import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { walkTrees } from '../../src/cli/doctor/gather-files.js';

test('the walk lists every entry without following symlinks, and stops at its cap saying so', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'doctor-walk-'));
  try {
    mkdirSync(path.join(dir, 'a/b'), { recursive: true });
    writeFileSync(path.join(dir, 'a/b/f'), 'x');
    symlinkSync('/', path.join(dir, 'a/up'));
    const all = await walkTrees([dir, path.join(dir, 'missing')]);
    assert.deepEqual(all.entries.map((e) => `${e.type} ${path.relative(dir, e.path)}`), ['dir ', 'dir a', 'dir a/b', 'file a/b/f', 'symlink a/up']);
    assert.equal(all.capped, false);
    assert.deepEqual(all.unreadable, []);
    const capped = await walkTrees([dir], 3);
    assert.equal(capped.entries.length, 3);
    assert.equal(capped.capped, true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
