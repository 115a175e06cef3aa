import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { prepareStatWorker, STAT_AHEAD_MIN, StatAhead, type ObjectStat } from '../../src/platform/stat-ahead.js';

// platform/stat-ahead.ts: a stage's lstats made on a worker thread ahead of its links (docs/design.md
// §20.3). Each result must be the path's own lstat, taken no later than it is asked for.

function scratch(t: { after(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'steward-stat-ahead-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function same(got: ObjectStat | undefined, want: fs.Stats | undefined, what: string): void {
  if (want === undefined) return assert.equal(got, undefined, `${what}: missing`);
  assert.ok(got, `${what}: found`);
  assert.deepEqual(
    { ino: got.ino, ctimeMs: got.ctimeMs, mode: got.mode, size: got.size, uid: got.uid, gid: got.gid, file: got.isFile() },
    { ino: want.ino, ctimeMs: want.ctimeMs, mode: want.mode, size: want.size, uid: want.uid, gid: want.gid, file: want.isFile() },
    what,
  );
}

for (const n of [STAT_AHEAD_MIN + 200, 20]) {
  test(`${n} paths (${n >= STAT_AHEAD_MIN ? 'on the worker' : 'on the main thread'}): each result is that path's lstat, in order, whatever the path is`, (t) => {
    const dir = scratch(t);
    prepareStatWorker();
    const paths: string[] = [];
    for (let i = 0; i < n; i++) {
      const p = path.join(dir, `f${i}`);
      const kind = i % 10;
      if (kind === 3) fs.mkdirSync(p);
      else if (kind === 5) fs.symlinkSync('f0', p);
      else if (kind !== 7) fs.writeFileSync(p, 'x'.repeat(i), { mode: i % 2 ? 0o444 : 0o555 });
      // kind 7: missing
      paths.push(p);
    }
    const ahead = StatAhead.start(paths);
    // Asked out of order too: a later result first, then every one.
    same(ahead.stat(n - 1), fs.lstatSync(paths[n - 1] as string, { throwIfNoEntry: false }), 'the last first');
    for (let i = 0; i < n; i++) same(ahead.stat(i), fs.lstatSync(paths[i] as string, { throwIfNoEntry: false }), `path ${i}`);
    ahead.stop();
    same(ahead.stat(1), fs.lstatSync(paths[1] as string), 'after stop, on this thread');
  });
}

test('a path made after the lstats began is found when asked for', async (t) => {
  const dir = scratch(t);
  const paths = Array.from({ length: STAT_AHEAD_MIN * 4 }, (_, i) => path.join(dir, `f${i}`));
  for (const p of paths.slice(0, -1)) fs.writeFileSync(p, 'x');
  const last = paths[paths.length - 1] as string;
  const ahead = StatAhead.start(paths);
  fs.writeFileSync(last, 'made late');
  for (let i = 0; i < paths.length - 1; i++) assert.ok(ahead.stat(i));
  same(ahead.stat(paths.length - 1), fs.lstatSync(last), 'made after the start');
  ahead.stop();
  // Nothing outlives its wait: the test process ends on its own (the worker is unref'd).
  await new Promise((res) => setTimeout(res, 10));
});
