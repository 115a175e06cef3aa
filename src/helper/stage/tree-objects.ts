import fs from 'node:fs';
import path from 'node:path';
import type { TreeEntry } from '../../core/tree-listing.js';
import type { Faults } from '../../platform/faults.js';
import { CheckedObjects } from '../../platform/object-checks.js';
import { fileAsObject, objectName } from '../../platform/object-store.js';
import { logger } from '../../platform/log.js';
import { TimeSlicer } from '../../platform/time-slice.js';

const log = logger('helper:objects');

export interface ObjectsFiled {
  // Bytes of the tree's files that were objects already (their names now link those objects).
  reusedBytes: number;
  // Objects this tree added.
  added: number;
}

// Files every regular file of a staged tree (still in its 0700 staging folder, its bytes made
// durable by the syncfs before) as an object, or links it to the object that holds the same bytes
// (docs/design.md §20). The tree's paths, modes and bytes stay what they were, so its digest is
// unchanged. Why after the syncfs: an object name must only ever name complete bytes, and a
// power cut after a link but before its data reached the disk would name an empty file. The
// caller makes the links durable (a second syncfs) before the tree's rename. A fault or a crash
// in the middle leaves complete objects and a staging folder that the next start removes.
export async function fileTreeAsObjects(objectsDir: string, tree: string, listing: readonly TreeEntry[], faults: Faults): Promise<ObjectsFiled> {
  // The walk made the tree's folders read-only (0555); a file replaced by a link to its object
  // needs its folder writable for the rename, also for a helper that is not root or has no
  // CAP_DAC_OVERRIDE. Chmodded by path: the tree is ours, inside the 0700 staging folder.
  const dirs = listing.filter((e) => e.type === 'dir');
  for (const d of dirs) fs.chmodSync(path.join(tree, d.path), 0o755);
  let filed: ObjectsFiled;
  try {
    filed = await fileEach(objectsDir, tree, listing, faults);
  } finally {
    // Children before parents (the walk lists parents first), as the walk sealed them.
    for (let i = dirs.length - 1; i >= 0; i--) fs.chmodSync(path.join(tree, (dirs[i] as TreeEntry).path), 0o555);
  }
  faults.hit('after-objects-before-rename');
  return filed;
}

async function fileEach(objectsDir: string, tree: string, listing: readonly TreeEntry[], faults: Faults): Promise<ObjectsFiled> {
  let reusedBytes = 0;
  let added = 0;
  // Objects checked (or made) by this call: a second name of the same bytes is not hashed again.
  const done = new Set<string>();
  const made = new Set<string>();
  const half = Math.floor(listing.filter((e) => e.type === 'file').length / 2);
  // docs/design.md §20.3: objects this stage made (hashed as they were extracted) or checked are
  // noted, so that a later stage links them without reading them again while they are unchanged.
  const record = CheckedObjects.load(objectsDir);
  const slicer = new TimeSlicer();
  let n = 0;
  try {
    for (const e of listing) {
      if (e.type !== 'file') continue;
      const name = objectName(e.sha256, e.mode);
      faults.io('objects', 'write');
      if (n++ === half) faults.hit('during-objects');
      let r: ReturnType<typeof fileAsObject>;
      try {
        r = fileAsObject(objectsDir, path.join(tree, e.path), name, e.size, done.has(name), (st) => record.unchanged(name, st));
      } catch (err) {
        record.forget(name);
        throw err;
      }
      record.note(name);
      // Why: the calls are synchronous; a turn of the event loop every slice keeps the helper answering.
      if (slicer.due()) await slicer.pass();
      if (r.replaced) log('object replaced name=%s: the one on disk %s', name, r.replaced);
      if (!r.reused && !done.has(name)) {
        added++;
        made.add(name);
      } else if (r.reused && !made.has(name)) reusedBytes += e.size;
      done.add(name);
    }
  } finally {
    record.save();
  }
  return { reusedBytes, added };
}
