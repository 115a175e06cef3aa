// Puts the events of a backup (restore) or of another store's snapshot (copy) into an empty
// store: rows through the loader's one transaction, tarballs into the target's artifacts folder
// (each written privately, fsynced and renamed into place before the rows that name it commit),
// then settle-loaded.ts, then the commit, then the file indexes made again. Any failure rolls the rows back and removes the
// tarballs this load placed: the target is left as it was.
import { createHash } from 'node:crypto';
import { createReadStream, promises as fsp } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import { artifactPath } from '../catalog/artifact-path.js';
import { placeReleaseBytes, receiveUpload } from '../catalog/upload-file.js';
import type { LoadedTx, StoreLoader } from '../store/bulk.js';
import { keepIndexAndObjects } from '../catalog/file-index-of.js';
import { indexedManifestOf } from '../rollouts/indexed-manifest.js';
import { manifestPayloadSchema } from '../../core/release-schemas.js';
import type { ArtifactMeta, DumpEvent } from './backup-format.js';
import { rowCounter, type Progress } from './dump-store.js';
import { settleLoaded, type SettleOptions, type Settled } from './settle-loaded.js';

export interface Loaded extends Settled {
  // Rows per table, and the tarballs placed or found in place.
  tables: Record<string, number>;
  artifacts: number;
}

// Loads `events` (rows of schema `schemaVersion`) into `loader`, tarballs into `artifactsDir`.
export async function loadStore(loader: StoreLoader, schemaVersion: number, events: AsyncIterable<DumpEvent>, o: { artifactsDir: string; progress: Progress; settle: Omit<SettleOptions, 'artifacts'> }): Promise<Loaded> {
  const placed: string[] = [];
  const artifacts = new Map<string, string>();
  const tables: Record<string, number> = {};
  try {
    await loader.begin(schemaVersion);
    let table: { shape: { name: string; columns: string[] }; count: ReturnType<typeof rowCounter> } | null = null;
    for await (const e of events) {
      switch (e.kind) {
        case 'table':
          table = { shape: e.table, count: rowCounter(e.table.name, o.progress) };
          break;
        case 'rows':
          if (!table) throw new StewardError('BACKUP_INVALID', 'rows came before their table');
          await loader.insert(table.shape.name, table.shape.columns, e.rows);
          table.count.add(e.rows.length);
          break;
        case 'tableEnd':
          tables[e.table] = table ? table.count.end() : e.rows;
          table = null;
          break;
        case 'sequence':
          await loader.raiseSequence(e.mark);
          break;
        case 'artifact': {
          const file = artifactPath(o.artifactsDir, e.artifact.app, e.artifact.version);
          if (await placeArtifact(file, e.artifact, e.bytes, o.artifactsDir)) placed.push(file);
          artifacts.set(`${e.artifact.app}@${e.artifact.version}`, file);
          o.progress(`tarball ${e.artifact.app} ${e.artifact.version}: ${e.artifact.size} bytes`);
          break;
        }
      }
    }
    const { settled, indexed } = await loader.commit(async (tx) => ({ settled: await settleLoaded(tx, { ...o.settle, artifacts }), indexed: await indexedReleases(tx) }));
    await keepIndexes(indexed, artifacts, o);
    return { ...settled, tables, artifacts: artifacts.size };
  } catch (err) {
    await loader.abort();
    // Why: these tarballs were not there before this load; no committed row names them.
    for (const f of placed) await fsp.rm(f, { force: true });
    throw err;
  }
}

// The releases whose indexed manifest the control plane sends (docs/design.md §20.2), with their index.
async function indexedReleases(tx: LoadedTx): Promise<Array<{ app: string; version: string; index: { url: string; integrity: string; size: number } }>> {
  const out = [];
  for (const r of await tx.releases.list()) {
    const m = indexedManifestOf(r);
    if (!m || r.artifactPath === null) continue;
    const p = manifestPayloadSchema.safeParse(JSON.parse(Buffer.from(m.payload, 'base64').toString('utf8')));
    if (p.success && p.data.index) out.push({ app: r.app, version: r.version, index: p.data.index });
  }
  return out;
}

// Makes each indexed release's index and objects again beside its tarball (a backup carries the
// tarballs only): without them its hosts would find no index and take the tarball. Made after
// the commit, from the tarball placed; one that cannot be made is told, and its hosts fall back
// to the tarball as they would for any index they cannot fetch, until `release add` again.
async function keepIndexes(indexed: Awaited<ReturnType<typeof indexedReleases>>, artifacts: Map<string, string>, o: { artifactsDir: string; progress: Progress }): Promise<void> {
  for (const r of indexed) {
    const file = artifacts.get(`${r.app}@${r.version}`);
    if (!file) continue;
    try {
      await keepIndexAndObjects(o.artifactsDir, r.app, r.version, file, r.index);
      o.progress(`file index ${r.app} ${r.version}: made again from its tarball`);
    } catch (err) {
      o.progress(`WARNING: the file index of ${r.app} ${r.version} could not be made again (${(err as Error).message}); its hosts take the tarball until \`steward-control release add ${r.app} ${r.version}\` is run again`);
    }
  }
}

// Writes a tarball to `file`, or finds it there already with the same bytes (a shared folder
// that outlived its database); true when this call placed it. Other bytes under its name are
// another catalog's: TARGET_NOT_EMPTY.
async function placeArtifact(file: string, meta: ArtifactMeta, bytes: AsyncIterable<Buffer>, artifactsDir: string): Promise<boolean> {
  const existing = await integrityOf(file);
  if (existing !== null) {
    if (existing !== meta.integrity) throw new StewardError('TARGET_NOT_EMPTY', `${file} exists and holds other bytes than the tarball of ${meta.app} ${meta.version}: restore and copy write into a tarball folder without other tarballs of the same names (--artifacts)`);
    for await (const _ of bytes) void _;
    return false;
  }
  const received = await receiveUpload(artifactsDir, bytes, meta.size);
  await placeReleaseBytes(received, file);
  return true;
}

// The sha512 SRI of the file at `file`, or null when there is none.
async function integrityOf(file: string): Promise<string | null> {
  const hash = createHash('sha512');
  try {
    for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) hash.update(chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return 'sha512-' + hash.digest('base64');
}
