import path from 'node:path';
import type { TreeEntry } from '../../core/tree-listing.js';
import type { Faults } from '../../platform/faults.js';
import { fileAsObject, objectName } from '../../platform/object-store.js';
import { logger } from '../../platform/log.js';

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
  let reusedBytes = 0;
  let added = 0;
  // Objects checked (or made) by this call: a second name of the same bytes is not hashed again.
  const done = new Set<string>();
  const made = new Set<string>();
  let n = 0;
  for (const e of listing) {
    if (e.type !== 'file') continue;
    const name = objectName(e.sha256, e.mode);
    faults.io('objects', 'write');
    if (n++ === Math.floor(countFiles(listing) / 2)) faults.hit('during-objects');
    const r = fileAsObject(objectsDir, path.join(tree, e.path), name, e.size, done.has(name));
    // Why: the calls are synchronous; a yield every 256 files keeps the helper answering.
    if (n % 256 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    if (r.replaced) log('object replaced name=%s: the one on disk %s', name, r.replaced);
    if (!r.reused && !done.has(name)) {
      added++;
      made.add(name);
    } else if (r.reused && !made.has(name)) reusedBytes += e.size;
    done.add(name);
  }
  faults.hit('after-objects-before-rename');
  return { reusedBytes, added };
}

const counts = new WeakMap<readonly TreeEntry[], number>();
function countFiles(listing: readonly TreeEntry[]): number {
  let c = counts.get(listing);
  if (c === undefined) {
    c = listing.filter((e) => e.type === 'file').length;
    counts.set(listing, c);
  }
  return c;
}
