import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installCode } from '../../src/install/copy-code.js';

// installCode copies steward's code with normalized modes, changes nothing when the installed
// tree matches, and swaps in a whole new tree when the source changed.

function makeSource(base: string): string {
  const src = path.join(base, 'src');
  mkdirSync(path.join(src, 'bin'), { recursive: true });
  mkdirSync(path.join(src, 'dist/src'), { recursive: true });
  mkdirSync(path.join(src, 'dist/test'), { recursive: true });
  mkdirSync(path.join(src, 'node_modules/.bin'), { recursive: true });
  writeFileSync(path.join(src, 'package.json'), '{"name":"steward"}');
  writeFileSync(path.join(src, 'bin/agentctl.js'), '#!/usr/bin/env node\n');
  // A loose umask in a checkout: group- and other-writable, executable by the owner only.
  chmodSync(path.join(src, 'bin/agentctl.js'), 0o775);
  writeFileSync(path.join(src, 'dist/src/main.js'), 'export {};\n');
  chmodSync(path.join(src, 'dist/src/main.js'), 0o666);
  writeFileSync(path.join(src, 'dist/test/x.test.js'), 'not installed\n');
  symlinkSync('../tool/cli.js', path.join(src, 'node_modules/.bin/tool'));
  chmodSync(path.join(src, 'dist'), 0o777);
  return src;
}

const ITEMS = ['package.json', 'bin', 'dist/src', 'node_modules', 'missing-is-fine'];

test('the code is copied with normalized modes, without dist/test, and a second copy changes nothing', async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-copy-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const src = makeSource(base);
  const dest = path.join(base, 'lib');
  assert.equal(await installCode(src, ITEMS, dest), 'created');
  const mode = (p: string) => (lstatSync(path.join(dest, p)).mode & 0o7777).toString(8);
  assert.equal(mode('bin/agentctl.js'), '755');
  assert.equal(mode('dist/src/main.js'), '644');
  assert.equal(mode('dist'), '755');
  assert.equal(mode('.'), '755');
  assert.equal(readlinkSync(path.join(dest, 'node_modules/.bin/tool')), '../tool/cli.js');
  assert.equal(existsSync(path.join(dest, 'dist/test')), false);
  assert.equal(await installCode(src, ITEMS, dest), 'unchanged');
  assert.deepEqual(readdirNames(base), ['lib', 'src'], 'no temp or old tree left behind');
});

test('a changed source file, or a file changed in the installed tree, makes the next copy replace the tree', async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-copy-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const src = makeSource(base);
  const dest = path.join(base, 'lib');
  await installCode(src, ITEMS, dest);
  writeFileSync(path.join(src, 'dist/src/main.js'), 'export const v = 2;\n');
  assert.equal(await installCode(src, ITEMS, dest), 'updated');
  assert.equal(readFileSync(path.join(dest, 'dist/src/main.js'), 'utf8'), 'export const v = 2;\n');
  writeFileSync(path.join(dest, 'stray.js'), 'left by someone\n');
  assert.equal(await installCode(src, ITEMS, dest), 'updated');
  assert.equal(existsSync(path.join(dest, 'stray.js')), false);
  assert.deepEqual(readdirNames(base), ['lib', 'src']);
});

function readdirNames(dir: string): string[] {
  return readdirSync(dir).sort();
}
