// `release remove`: take a version out of the catalog (docs/design.md §11), never while a running
// rollout uses it.
import { promises as fsp } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import { localActor, recordAudit, type Actor } from '../audit/record-audit.js';
import type { ControlStore, ReleaseRow } from '../store/store.js';
import { artifactPath } from './artifact-path.js';
import { collectServerObjects } from './collect-objects.js';
import { indexPath } from './file-index-of.js';
import { compressedIndexPath } from './pack-records.js';
import { removePatchesOf } from './patch-path.js';
import { logger } from '../../platform/log.js';

const log = logger('control:catalog');

// Removes app@version and its kept tarball; BUSY while a run of it has not ended, or a target
// or a node pin names it (docs/design.md §18).
export async function removeRelease(store: ControlStore, artifactsDir: string, app: string, version: string, actor: Actor = localActor()): Promise<ReleaseRow> {
  const row = await store.write(async (tx) => {
    const r = await tx.releases.get(app, version);
    if (!r) throw new StewardError('NOT_FOUND', `${app} ${version} is not in the catalog`);
    const run = (await tx.runs.runningOf(app)).find((r) => r.version === version);
    if (run) throw new StewardError('BUSY', `rollout ${run.id} of ${app} ${version} is running; stop it before removing the release`);
    // A standing wish for the version would start runs of a release the catalog no longer has.
    const wanted = (await tx.targets.list()).find((t) => t.app === app && t.version === version);
    if (wanted) throw new StewardError('BUSY', `target ${wanted.name} wants ${app} ${version}; set it to another version or remove it before removing the release`);
    const pinned = (await tx.pins.list()).find((p) => p.app === app && p.version === version);
    if (pinned) throw new StewardError('BUSY', `node ${pinned.nodeId} is pinned to ${app} ${version}; unpin it before removing the release`);
    await tx.releases.remove(app, version);
    await recordAudit(tx, actor, 'release.remove', `${app}@${version}`, { integrity: r.integrity, keyId: r.keyId });
    return r;
  });
  // Why after the commit: the catalog no longer names the tarball, so nothing serves it; a crash
  // before this line leaves a file nobody reads, never a release without its file.
  if (row.artifactPath !== null) await fsp.rm(artifactPath(artifactsDir, app, version), { force: true });
  // Its file index too (docs/design.md §20), its compressed copies, and the patches to and from
  // it (§20.5); then the objects (and their kept records) no other kept index lists (§20.4).
  const indexFile = indexPath(artifactsDir, app, version);
  for (const f of [indexFile, compressedIndexPath(indexFile, 'gzip'), compressedIndexPath(indexFile, 'zstd')]) await fsp.rm(f, { force: true });
  await removePatchesOf(artifactsDir, app, version);
  // Why caught: the release is removed whatever happens here; what stays is collected next time.
  await collectServerObjects(artifactsDir, app).catch((err: unknown) => log('objects of %s not collected: %s', app, (err as Error).message));
  return row;
}
