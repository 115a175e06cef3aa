import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectServerObjects, OBJECT_GRACE_MS } from '../../src/control/catalog/collect-objects.js';
import { indexOfTarball, indexPath, keepIndexAndObjects, serverObjectsDir } from '../../src/control/catalog/file-index-of.js';
import { releaseOf } from '../helpers/object-releases.js';

// docs/design.md §20.4: the control plane's objects go when no kept index lists them, and not
// before the grace that covers another instance's release add in flight.
test('objects no kept index lists are collected after the grace; shared ones and young ones stay', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-collect-objects-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const artifacts = path.join(dir, 'artifacts');
  for (const [v, changed] of [['1.0.0', 'one\n'], ['1.1.0', 'two\n']] as const) {
    const file = path.join(dir, `web-${v}.tgz`);
    writeFileSync(file, releaseOf(v, changed));
    await keepIndexAndObjects(artifacts, 'web', v, file, await indexOfTarball(file));
  }
  const objects = serverObjectsDir(artifacts, 'web');
  const all = readdirSync(objects).filter((n) => /^[0-9a-f]{64}$/.test(n));
  // A compressed copy of an object is named by its sha256 too, and goes with it.
  const only1 = [] as string[];
  const idx = (v: string) => readdirSync(path.dirname(indexPath(artifacts, 'web', v)));
  assert.ok(idx('1.0.0').includes('1.0.0.index.json'));

  // Young: nothing goes even with 1.0.0's index removed.
  rmSync(indexPath(artifacts, 'web', '1.0.0'));
  assert.deepEqual(await collectServerObjects(artifacts, 'web'), { removed: 0, bytes: 0 });
  assert.equal(readdirSync(objects).filter((n) => /^[0-9a-f]{64}$/.test(n)).length, all.length);

  // After the grace: the objects only 1.0.0 listed (its server.js and release file) go.
  const later = Date.now() + OBJECT_GRACE_MS + 1000;
  const kept = new Set(JSON.parse(readFileText(indexPath(artifacts, 'web', '1.1.0'))).entries.filter((e: { type: string }) => e.type === 'file').map((e: { sha256: string }) => e.sha256));
  for (const n of all) if (!kept.has(n)) only1.push(n);
  assert.equal(only1.length, 2, 'server.js and steward-release.json of 1.0.0');
  writeFileSync(path.join(objects, `${only1[0]}.gz`), 'x');
  // Each object with what its name has after the sha256 (its compressed pack records, say).
  const theirs = readdirSync(objects).filter((n) => only1.some((o) => n.startsWith(o)));
  assert.ok(theirs.length >= 3, theirs.join(' '));
  const r = await collectServerObjects(artifacts, 'web', later);
  assert.equal(r.removed, theirs.length);
  const left = readdirSync(objects);
  for (const n of only1) assert.ok(!left.some((l) => l.startsWith(n)), `${n} collected`);
  for (const n of kept) assert.ok(left.includes(n as string), `${n as string} kept: 1.1.0 lists it`);

  // An index that does not read stops the collection: nothing is removed on a guess.
  writeFileSync(indexPath(artifacts, 'web', '0.1.0'), '{"entries":');
  rmSync(indexPath(artifacts, 'web', '1.1.0'));
  assert.deepEqual(await collectServerObjects(artifacts, 'web', later), { removed: 0, bytes: 0 });
  assert.equal(readdirSync(objects).length, left.length);
});

function readFileText(file: string): string {
  return readFileSyncUtf8(file);
}
import { readFileSync } from 'node:fs';
function readFileSyncUtf8(file: string): string {
  return readFileSync(file, 'utf8');
}
