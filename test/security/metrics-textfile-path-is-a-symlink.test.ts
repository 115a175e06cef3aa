// The attack: someone who can write in node_exporter's textfile folder puts a symlink where the
// helper's metrics.textfile goes, pointing at a file root cares about, hoping that root, which
// rewrites the textfile after every change, writes through it (or replaces something else).
// The helper refuses to replace a symlink or anything not a regular file there, and writes its
// temp file with O_EXCL|O_NOFOLLOW (src/platform/fs-atomic.ts): the target is never touched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { keepTextfile } from '../../src/helper/metrics/textfile-keeper.js';

const TEXT = 'steward_receipts_total{outcome="active"} 1\n';

test('a symlink at the textfile path is left as it is and its target untouched; a regular file there is replaced', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-textfile-link-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const victim = path.join(dir, 'shadow');
  writeFileSync(victim, 'root:secret\n', { mode: 0o600 });
  const folder = path.join(dir, 'node-exporter');
  mkdirSync(folder);
  const file = path.join(folder, 'steward.prom');
  symlinkSync(victim, file);
  const keeper = keepTextfile(file, async () => TEXT);
  keeper.changed();
  await keeper.idle();
  assert.equal(readFileSync(victim, 'utf8'), 'root:secret\n', 'nothing written through the link');
  assert.equal(lstatSync(victim).mode & 0o777, 0o600);
  assert.ok(lstatSync(file).isSymbolicLink(), 'the link is not replaced either');
  assert.equal(readlinkSync(file), victim);
  assert.deepEqual(readdirSync(folder), ['steward.prom'], 'no temp file left');
  // Once the link is gone, the next change writes the file.
  unlinkSync(file);
  keeper.changed();
  await keeper.idle();
  assert.ok(lstatSync(file).isFile());
  assert.equal(readFileSync(file, 'utf8'), TEXT);
});

test('a folder at the textfile path is left as it is', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-textfile-link-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'steward.prom');
  mkdirSync(file);
  writeFileSync(path.join(file, 'inside'), 'x');
  const keeper = keepTextfile(file, async () => TEXT);
  keeper.changed();
  await keeper.idle();
  assert.ok(lstatSync(file).isDirectory());
  assert.deepEqual(readdirSync(file), ['inside']);
  assert.deepEqual(readdirSync(dir), ['steward.prom'], 'no temp file left');
});
