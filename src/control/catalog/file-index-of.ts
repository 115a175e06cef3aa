// The file index of a release tarball (docs/design.md §20), made by `release add` where the key is
// (to sign its integrity) and again by the catalog from the kept tarball (to keep it, and the
// objects a pack sends, beside the tarball). Both run the helper's own extraction (its rules, its
// modes), so the index lists exactly the tree a host stages from the tarball.
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeFileIndex } from '../../core/file-index.js';
import type { TreeEntry } from '../../core/tree-listing.js';
import { removeOwnTree } from '../../platform/remove-tree.js';
import { extractArchive } from '../../platform/tarball.js';
import { isAppName } from '../../core/name-checks.js';
import { isVersion } from '../../core/version.js';
import { StewardError } from '../../core/errors.js';
import { compressedIndexPath, ensureCompressedIndex, ensureRecord, keptCompressions } from './pack-records.js';
import { writeDurably } from './write-durably.js';

// The caps an index the catalog made and kept is read back under (packs, patches, collection):
// its own, so only a file that is no index of ours is refused.
export const KEPT_INDEX_LIMITS = { maxEntries: 1_000_000, maxPathBytes: 4096, maxDepth: 1024, maxTotalBytes: Number.MAX_SAFE_INTEGER };

// The extraction's caps a host uses unless its config says otherwise (docs/host.md).
const LIMITS = { maxEntries: 100_000, maxBytes: 2 * 1024 ** 3, maxPathLength: 4096, maxDepth: 64, maxRatio: 200 };

export interface TarballIndex {
  bytes: Buffer;
  integrity: string;
  size: number;
  listing: TreeEntry[];
}

// Extracts `file` into a temporary folder, hands the tree and its index to `use`, and removes it.
export async function withTarballIndex<T>(file: string, use: (index: TarballIndex, tree: string) => Promise<T>): Promise<T> {
  const top = await fsp.mkdtemp(path.join(os.tmpdir(), 'steward-index-'));
  const tree = path.join(top, 'tree');
  try {
    const ex = await extractArchive({ archivePath: file, dest: tree, limits: LIMITS });
    const bytes = encodeFileIndex(ex.listing);
    return await use({ bytes, size: bytes.length, integrity: 'sha512-' + createHash('sha512').update(bytes).digest('base64'), listing: ex.listing }, tree);
  } finally {
    await removeOwnTree(top);
  }
}

// The index's integrity and size, for the manifest.
export async function indexOfTarball(file: string): Promise<{ integrity: string; size: number }> {
  return withTarballIndex(file, async (i) => ({ integrity: i.integrity, size: i.size }));
}

// Where the catalog keeps the index of app@version, and the app's objects (by sha256).
export function indexPath(artifactsDir: string, app: string, version: string): string {
  if (!isAppName(app) || !isVersion(version)) throw new StewardError('USAGE', `${app} ${version} is not an app and version`);
  return path.join(artifactsDir, app, `${version}.index.json`);
}
export function serverObjectsDir(artifactsDir: string, app: string): string {
  if (!isAppName(app)) throw new StewardError('USAGE', `${app} is not an app name`);
  return path.join(artifactsDir, app, 'objects');
}

// Keeps the index of a kept tarball and its files as objects, checking the index is the one the
// manifest signs (INTEGRITY_MISMATCH otherwise). Each object and the index are written to a
// temporary name, fsynced and renamed: a crash leaves whole files or none. Each object's
// compressed pack records and the compressed index are kept too (pack-records.ts).
export async function keepIndexAndObjects(artifactsDir: string, app: string, version: string, file: string, signed: { integrity: string; size: number }): Promise<void> {
  await withTarballIndex(file, async (index, tree) => {
    if (index.integrity !== signed.integrity || index.size !== signed.size) {
      throw new StewardError('INTEGRITY_MISMATCH', `the file index of ${app} ${version} is not the one its manifest signs (release add and this control plane disagree on the tree)`);
    }
    const objects = serverObjectsDir(artifactsDir, app);
    await fsp.mkdir(objects, { recursive: true, mode: 0o755 });
    for (const e of index.listing) {
      if (e.type !== 'file') continue;
      const dest = path.join(objects, e.sha256);
      if (await fsp.lstat(dest).then((st) => st.isFile() && st.size === e.size, () => false)) {
        // Touched: a collection running on another instance now leaves it (collect-objects.ts's grace).
        await fsp.utimes(dest, new Date(), new Date()).catch(() => undefined);
        continue;
      }
      await writeDurably(dest, await fsp.readFile(path.join(tree, e.path)));
    }
    // The records a pack answer concatenates, and the compressed index (pack-records.ts),
    // made now so that no request compresses; the index's own copies first removed, as a
    // copy from before would not be this index's.
    const indexFile = indexPath(artifactsDir, app, version);
    for (const c of keptCompressions()) {
      for (const e of index.listing) if (e.type === 'file') await ensureRecord(objects, e.sha256, e.size, c);
      await fsp.rm(compressedIndexPath(indexFile, c), { force: true });
    }
    await writeDurably(indexFile, index.bytes);
    for (const c of keptCompressions()) await ensureCompressedIndex(indexFile, c);
  });
}
