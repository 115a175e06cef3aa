import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { stagingDir } from '../../core/paths.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { layOutStewardTree, packTree } from '../../platform/release-tree.js';
import { packageRoot } from '../../platform/own-version.js';
import { readMarker } from '../release-store.js';
import { stageRelease, type StageDeps } from '../stage/stage-release.js';

// A package trial's tree (docs/design.md §14: the package's own version goes through the same trial):
// the package this helper runs from, laid out as a release of the app steward, packed and
// staged into versions/<version> like an admin's unsigned local release (the package's files
// are root's, so no signature vouches for more). A commit then swaps `current` to it like to
// any release. Nothing to do when versions/<version> is there with a valid marker.
export async function stagePackageTree(deps: StageDeps, version: string): Promise<void> {
  if (await readMarker(deps.paths, SELF_APP, version)) return;
  const pkg = packageRoot();
  if (!pkg) throw new StewardError('INTERNAL', `${SELF_APP} ${version}: cannot find the package this helper runs from`);
  // Under .staging/ (writable to the helper's unit, cleaned at every start), not /tmp (read-only
  // to it under ProtectSystem=strict).
  const work = path.join(stagingDir(deps.paths, SELF_APP), `package-${version}`);
  await fsp.rm(work, { recursive: true, force: true });
  await fsp.mkdir(work, { recursive: true, mode: 0o700 });
  try {
    await layOutStewardTree(pkg, path.join(work, 'tree'), version);
    const tgz = path.join(work, 'package.tgz');
    await packTree(path.join(work, 'tree'), tgz);
    const integrity = `sha512-${createHash('sha512').update(await fsp.readFile(tgz)).digest('base64')}`;
    await stageRelease(deps, { kind: 'admin', app: SELF_APP, version, path: tgz, integrity, allowUnsigned: true, allowDowngrade: true, force: true });
  } finally {
    // Why: only the staged tree in versions/ is kept; the source of its tarball goes.
    await fsp.rm(work, { recursive: true, force: true });
  }
}
