// The keeper of the helper's node_exporter textfile: an atomic replace on every change that
// alters the text (a reader in another process never sees a part of a file, nor no file), one
// write for changes that arrive together, none for a change that alters nothing, and a missing
// folder logged, not thrown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { keepTextfile } from '../../../src/helper/metrics/textfile-keeper.js';

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-textfile-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Reads `file` in a loop until `stop` exists; prints how many reads were whole files, partial, or found no file.
const READER = `
const fs = require('node:fs');
const [file, stop] = process.argv.slice(1);
let reads = 0, partial = 0, missing = 0;
while (!fs.existsSync(stop)) {
  let text;
  try { text = fs.readFileSync(file, 'utf8'); } catch (err) { if (err.code === 'ENOENT') { missing++; continue; } throw err; }
  reads++;
  const m = /^# gen (\\d+)\\n/.exec(text);
  if (!m || !text.endsWith('# end ' + m[1] + '\\n')) partial++;
}
console.log(JSON.stringify({ reads, partial, missing }));
`;

test('a reader looping on the file in another process sees only whole files, old or new, never none', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'steward.prom');
  const stop = path.join(dir, 'stop');
  let gen = 0;
  // About 300 KB a text: a write that were not atomic would be seen half done.
  const keeper = keepTextfile(file, async () => `# gen ${gen}\n${Array.from({ length: 20_000 }, (_, i) => `x${i} ${gen}`).join('\n')}\n# end ${gen}\n`);
  keeper.changed();
  await keeper.idle();
  const reader = spawn(process.execPath, ['-e', READER, file, stop], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  reader.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => reader.once('exit', resolve));
  for (gen = 1; gen <= 40; gen++) {
    keeper.changed();
    await keeper.idle();
  }
  writeFileSync(stop, '');
  assert.equal(await exited, 0);
  const seen = JSON.parse(out) as { reads: number; partial: number; missing: number };
  assert.ok(seen.reads > 0, 'the reader read');
  assert.deepEqual([seen.partial, seen.missing], [0, 0], JSON.stringify(seen));
  assert.match(readFileSync(file, 'utf8'), /^# gen 40\n/);
  assert.equal(statSync(file).mode & 0o777, 0o644, "readable by node_exporter's user");
});

test('changes that arrive together are one render and one write; a change that alters nothing writes nothing', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'steward.prom');
  let renders = 0;
  let text = 'steward_receipts_total{outcome="active"} 1\n';
  const keeper = keepTextfile(file, async () => {
    renders++;
    return text;
  });
  for (let i = 0; i < 100; i++) keeper.changed();
  await keeper.idle();
  assert.equal(renders, 1);
  const first = statSync(file);
  keeper.changed();
  await keeper.idle();
  assert.equal(renders, 2);
  assert.equal(statSync(file).ino, first.ino, 'the same text is not written again');
  text = 'steward_receipts_total{outcome="active"} 2\n';
  keeper.changed();
  await keeper.idle();
  assert.notEqual(statSync(file).ino, first.ino, 'a new text is a new file renamed over the old');
  assert.equal(readFileSync(file, 'utf8'), text);
  assert.deepEqual(
    (await import('node:fs')).readdirSync(dir),
    ['steward.prom'],
    'no temp file is left behind',
  );
});

test('a folder that does not exist is logged, not thrown, and the file is written once it exists', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'node-exporter', 'steward.prom');
  const keeper = keepTextfile(file, async () => 'steward_receipts_total{outcome="active"} 0\n');
  keeper.changed();
  await keeper.idle();
  assert.equal(existsSync(path.dirname(file)), false, 'the keeper makes no folder: it is node_exporter’s');
  mkdirSync(path.dirname(file));
  keeper.changed();
  await keeper.idle();
  assert.equal(readFileSync(file, 'utf8'), 'steward_receipts_total{outcome="active"} 0\n');
});
