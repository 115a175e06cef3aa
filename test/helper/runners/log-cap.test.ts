import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, writeSync, closeSync, constants as C } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { capLogFile } from '../../../src/helper/runners/log-cap.js';

// The log cap (log-cap.ts): the file is cut in place to its newest part, from a line start.

function scratch(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-logcap-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const numbered = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${String(from + i).padStart(6, '0')} ${'x'.repeat(50)}\n`).join('');

test('a log over its cap keeps its newest half, from the start of a line; one under it is left as it is', (t) => {
  const dir = scratch(t);
  const file = path.join(dir, 'web.log');
  const text = numbered(0, 3000); // 3000 lines of 63 bytes
  writeFileSync(file, text);
  const max = 64 * 1024;
  const cut = capLogFile(file, max);
  return cut.then((n) => {
    const kept = readFileSync(file, 'utf8');
    assert.equal(n + kept.length, text.length, 'what was cut and what is kept make the file');
    assert.equal(kept, text.slice(n), 'the newest part, unchanged');
    assert.ok(kept.length <= max / 2 && kept.length > max / 2 - 63, `about half the cap: ${kept.length}`);
    assert.match(kept, /^line \d{6} /, 'from the start of a line');
    assert.ok(kept.endsWith(numbered(2999, 3000)));
  }).then(async () => {
    const before = readFileSync(file, 'utf8');
    assert.equal(await capLogFile(file, 64 * 1024), 0);
    assert.equal(readFileSync(file, 'utf8'), before);
    assert.equal(await capLogFile(path.join(dir, 'none.log'), 64 * 1024), 0, 'no file, nothing to cut');
  });
});

test("the app's own O_APPEND writes after a cut land at the new end", async (t) => {
  const dir = scratch(t);
  const file = path.join(dir, 'web.log');
  writeFileSync(file, numbered(0, 2000));
  // The app's fd, as the runner opens it for the child.
  const fd = openSync(file, C.O_WRONLY | C.O_APPEND);
  t.after(() => closeSync(fd));
  const cut = await capLogFile(file, 64 * 1024);
  assert.ok(cut > 0);
  const size = statSync(file).size;
  writeSync(fd, 'after the cut\n');
  const text = readFileSync(file, 'utf8');
  assert.equal(text.length, size + 'after the cut\n'.length, 'no hole and no overwrite');
  assert.ok(text.endsWith(`${numbered(1999, 2000)}after the cut\n`));
});

test('a symlink or a hard link at the log path is refused and its target left alone', async (t) => {
  const dir = scratch(t);
  const victim = path.join(dir, 'victim');
  const big = numbered(0, 3000);
  writeFileSync(victim, big);
  symlinkSync(victim, path.join(dir, 'web.log'));
  await assert.rejects(capLogFile(path.join(dir, 'web.log'), 64 * 1024));
  const { linkSync } = await import('node:fs');
  linkSync(victim, path.join(dir, 'other.log'));
  await assert.rejects(capLogFile(path.join(dir, 'other.log'), 64 * 1024), /single link/);
  assert.equal(readFileSync(victim, 'utf8'), big);
});
