// The attack: the helper, as root, rewrites its metrics.textfile after every change. If the
// folder it writes into (or one above it) is one another user can write, that user can swap the
// name between the helper's checks and its rename: a symlink, a folder of theirs, or the folder
// itself moved aside for one they own, so that root writes or replaces where they choose. The
// helper writes only into a folder that it, its folders above and their owners leave to root
// (src/platform/trusted-file.ts), and a refused write is logged and counted, never thrown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { keepTextfile } from '../../src/helper/metrics/textfile-keeper.js';
import { IS_ROOT } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-textfile-folder-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A keeper whose text names how many writes failed before it.
function keeper(file: string) {
  return keepTextfile(file, async (writeErrors) => `steward_textfile_write_errors_total ${writeErrors}\n`);
}

for (const mode of [0o777, 0o775, 0o757]) {
  test(`a folder of mode ${mode.toString(8)} is not written into until only its owner can write it`, async (t) => {
    const folder = path.join(tempDir(t), 'node-exporter');
    mkdirSync(folder);
    chmodSync(folder, mode);
    const file = path.join(folder, 'steward.prom');
    const k = keeper(file);
    k.changed();
    await k.idle();
    assert.deepEqual(readdirSync(folder), [], 'no file and no temp file');
    chmodSync(folder, 0o755);
    k.changed();
    await k.idle();
    assert.equal(readFileSync(file, 'utf8'), 'steward_textfile_write_errors_total 1\n', 'the refused write is counted');
  });
}

test('a folder owned by another user is not written into', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'chown to another user needs root');
  const folder = path.join(tempDir(t), 'node-exporter');
  mkdirSync(folder, { mode: 0o755 });
  chownSync(folder, 65534, 65534);
  const k = keeper(path.join(folder, 'steward.prom'));
  k.changed();
  await k.idle();
  assert.deepEqual(readdirSync(folder), []);
});

test('a folder under one that others can write (not sticky) is not written into', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'the folders above the textfile folder are held to the rule only for root');
  const open = path.join(tempDir(t), 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  const folder = path.join(open, 'node-exporter');
  mkdirSync(folder, { mode: 0o755 });
  const file = path.join(folder, 'steward.prom');
  const k = keeper(file);
  k.changed();
  await k.idle();
  assert.equal(existsSync(file), false);
  assert.deepEqual(readdirSync(folder), []);
  chmodSync(open, 0o1777);
  k.changed();
  await k.idle();
  assert.equal(readFileSync(file, 'utf8'), 'steward_textfile_write_errors_total 1\n', 'a sticky folder above is fine, as /tmp');
});
