import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tailLines } from '../../src/platform/log-tail.js';

function scratch(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-tail-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join('');

test('tailLines keeps the last lines written after the offset', async (t) => {
  const file = path.join(scratch(t), 'web.log');
  const before = 'an older version wrote this\n';
  writeFileSync(file, before + numbered(1, 500));
  assert.equal(await tailLines(file, Buffer.byteLength(before)), numbered(301, 500));
  assert.equal(await tailLines(file, Buffer.byteLength(before), 3), numbered(498, 500));
  assert.equal(await tailLines(file, Buffer.byteLength(before + numbered(1, 499))), numbered(500, 500));
});

test('tailLines reads at most maxBytes and drops the line the cut splits', async (t) => {
  const file = path.join(scratch(t), 'web.log');
  writeFileSync(file, numbered(1, 100));
  // "line 100\n" is 9 bytes, "line 99\n" is 8: 12 bytes cut into "line 99".
  assert.equal(await tailLines(file, 0, 200, 12), 'line 100\n');
});

test('tailLines gives nothing for a missing file or a symlink, and reads a truncated file from its start', async (t) => {
  const dir = scratch(t);
  assert.equal(await tailLines(path.join(dir, 'missing.log'), 0), '');
  writeFileSync(path.join(dir, 'secret'), 'secret\n');
  symlinkSync(path.join(dir, 'secret'), path.join(dir, 'link.log'));
  await assert.rejects(tailLines(path.join(dir, 'link.log'), 0), { code: 'ELOOP' });
  writeFileSync(path.join(dir, 'short.log'), 'after truncation\n');
  assert.equal(await tailLines(path.join(dir, 'short.log'), 10_000), 'after truncation\n');
});
