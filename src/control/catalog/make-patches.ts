// Static zstd patches at `release add` (docs/design.md §20.5): for a release whose index and
// objects the catalog keeps, a patch from each of the 2 newest earlier versions of the app that
// have an index, `<artifacts>/<app>/<to>.from-<from>.patch` (core/object-patch.ts), and the
// index's delta from that version's index, `<to>.index.json.from-<from>.zst`, where the runtime
// has zstd. A patch is an optimisation: one that cannot be made is named, not an error.
import { constants as fsc, promises as fsp } from 'node:fs';
import path from 'node:path';
import { hasZstd, zstdConstant, zstdOf } from '../../core/compression.js';
import { parseFileIndex } from '../../core/file-index.js';
import { packBytes, packHeader } from '../../core/object-pack.js';
import { encodePatchHeader, patchDictionary, patchWindowLog, planPatch, PATCH_WINDOW_LOG_MAX } from '../../core/object-patch.js';
import { compareVersions, isVersion } from '../../core/version.js';
import { indexPath, KEPT_INDEX_LIMITS, serverObjectsDir } from './file-index-of.js';
import { indexDeltaPath, patchPath } from './patch-path.js';
import { writeDurably } from './write-durably.js';

// How many earlier versions get a patch to a new one.
export const PATCHES_PER_RELEASE = 2;

export interface MadePatches {
  // The versions a patch to this one was made from, newest first.
  from: string[];
  // Why fewer than PATCHES_PER_RELEASE were made, when that is not simply "no earlier version".
  notes: string[];
}

// The versions of `app` below `version` whose index the catalog keeps, newest first.
async function indexedBefore(artifactsDir: string, app: string, version: string): Promise<string[]> {
  const names = await fsp.readdir(path.join(artifactsDir, app)).catch(() => [] as string[]);
  return names
    .map((n) => /^(.+)\.index\.json$/.exec(n)?.[1])
    .filter((v): v is string => v !== undefined && isVersion(v) && compareVersions(v, version) < 0)
    .sort((a, b) => compareVersions(b, a));
}

async function readObject(objects: string, sha256: string): Promise<Buffer> {
  // Why O_NOFOLLOW: the artifacts folder may be writable by others; never read through a symlink.
  const fh = await fsp.open(path.join(objects, sha256), fsc.O_RDONLY | fsc.O_NOFOLLOW);
  try {
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

// Makes the patches to app@version from its 2 newest indexed predecessors; none where the runtime lacks zstd.
export async function makePatches(artifactsDir: string, app: string, version: string): Promise<MadePatches> {
  const zs = zstdOf();
  if (!zs || !hasZstd()) return { from: [], notes: [`no patches: this runtime (Node ${process.versions.node}) has no zstd (Node 22.15 and later have it)`] };
  const made: MadePatches = { from: [], notes: [] };
  const objects = serverObjectsDir(artifactsDir, app);
  const newRaw = await fsp.readFile(indexPath(artifactsDir, app, version));
  const newEntries = parseFileIndex(newRaw, KEPT_INDEX_LIMITS);
  for (const from of (await indexedBefore(artifactsDir, app, version)).slice(0, PATCHES_PER_RELEASE)) {
    const oldRaw = await fsp.readFile(indexPath(artifactsDir, app, from));
    const oldEntries = parseFileIndex(oldRaw, KEPT_INDEX_LIMITS);
    // The index's own delta first: a helper that has `from` fetches it instead of the index.
    const indexWindow = patchWindowLog(oldRaw.length, newRaw.length);
    if (indexWindow !== null) {
      const delta = zs.zstdCompressSync(newRaw, { dictionary: oldRaw, params: { [zstdConstant('ZSTD_c_compressionLevel')]: 19, [zstdConstant('ZSTD_c_windowLog')]: indexWindow } } as { params: Record<number, number> });
      await writeDurably(indexDeltaPath(artifactsDir, app, version, from), delta);
    }
    const plan = planPatch(newEntries, oldEntries);
    const bases = patchDictionary(plan);
    // The window is judged from the indexes' sizes before any object is read.
    const oldSizes = new Map(oldEntries.flatMap((e) => (e.type === 'file' ? [[e.sha256, e.size] as const] : [])));
    const dictBytes = bases.reduce((n, b) => n + (oldSizes.get(b) ?? 0), 0);
    const outBytes = packBytes(plan.map((o) => o.size));
    const windowLog = patchWindowLog(dictBytes, outBytes);
    if (windowLog === null) {
      made.notes.push(`no patch from ${from}: its ${dictBytes} bytes of bases and ${outBytes} of output pass a 2^${PATCH_WINDOW_LOG_MAX}-byte window`);
      continue;
    }
    const dictionary = Buffer.concat(await Promise.all(bases.map((b) => readObject(objects, b))));
    const records: Buffer[] = [];
    for (const o of plan) records.push(packHeader(o.sha256, o.size), await readObject(objects, o.sha256));
    const output = Buffer.concat(records);
    const body = zs.zstdCompressSync(output, {
      ...(dictionary.length > 0 ? { dictionary } : {}),
      params: { [zstdConstant('ZSTD_c_compressionLevel')]: 19, [zstdConstant('ZSTD_c_windowLog')]: windowLog },
    } as { params: Record<number, number> });
    await writeDurably(patchPath(artifactsDir, app, version, from), Buffer.concat([encodePatchHeader({ v: 1, from, to: version, objects: plan }), body]));
    made.from.push(from);
  }
  return made;
}
