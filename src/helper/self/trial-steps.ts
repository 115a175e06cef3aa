import { promises as fsp } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import { currentLink, type HostPaths } from '../../core/paths.js';
import { isVersion } from '../../core/version.js';
import { pointerLine, SELF_APP, SELF_SCHEMA_VERSION, type SelfFile } from '../../core/self-schemas.js';
import { ensureDir, fsyncDir, swapSymlink, writeFileAtomic } from '../../platform/fs-atomic.js';
import { readCurrent, readMarker } from '../release-store.js';
import { readSelfFiles, selfFile } from './self-files.js';

// The helper's steps of a self-update trial (docs/design.md §14); the launcher takes the others.

// Offers versions/<version> of the app steward to the launcher's next start: writes `candidate`
// with the atomic file replace. `current` does not move; the caller then restarts the unit.
export async function writeCandidate(paths: HostPaths, version: string): Promise<void> {
  if (!isVersion(version)) throw new StewardError('BAD_REQUEST', `${SELF_APP}: not a version: ${JSON.stringify(version)}`);
  if (!(await readMarker(paths, SELF_APP, version))) {
    throw new StewardError('RELEASE_INVALID', `${SELF_APP} ${version}: versions/${version} has no valid marker, so it cannot be a candidate`);
  }
  const cur = await readCurrent(paths, SELF_APP);
  if (cur.state === 'valid' && cur.version === version) throw new StewardError('ALREADY_ACTIVE', `${SELF_APP} ${version} is current already`);
  const files = await readSelfFiles(paths);
  // Another trial is under way (or its outcome not read yet): a new candidate now would run
  // on a start meant to judge that one.
  if (files.trying.state !== 'absent') throw new StewardError('BUSY', `${SELF_APP}: ${selfFile(paths, 'trying')} exists: a trial is under way`);
  await ensureDir(paths.selfDir, 0o700);
  await writeFileAtomic(selfFile(paths, 'candidate'), pointerLine({ schemaVersion: SELF_SCHEMA_VERSION, version, source: 'release' }), 0o600);
}

// The trial of `version` passed (the caller probed itself): `current` of the app steward is
// swapped to versions/<version>, then `trying` is removed, then the start count and a
// fallback of the old current. The swap is the commit point: a cut after it leaves `trying`,
// which the launcher renames to `reverted` and then runs `current`, this version, again
// (readTrialState reports such a `reverted` as committed). A package trial's tree must be in
// versions/<version>, with its marker, before this is called.
export async function commitTrial(paths: HostPaths, version: string): Promise<void> {
  const files = await readSelfFiles(paths);
  const trying = files.trying.state === 'valid' ? files.trying.value : null;
  if (!trying || trying.version !== version) {
    throw new StewardError('STATE_INVALID', `${SELF_APP} ${version}: ${selfFile(paths, 'trying')} does not name it, so it is not on trial`);
  }
  if (!(await readMarker(paths, SELF_APP, version))) {
    const how = trying.source === 'package' ? ` (the package's tree is to be staged there before the commit)` : '';
    throw new StewardError('RELEASE_INVALID', `${SELF_APP} ${version}: versions/${version} has no valid marker${how}`);
  }
  await swapSymlink(currentLink(paths, SELF_APP), `versions/${version}`);
  // One fsync for the three: whichever of them a cut keeps, the launcher's next start runs
  // `current`, this version (the start count of another version is none to it).
  await removeSelfFiles(paths, ['trying', 'starts', 'fallback']);
}

// The helper got ready: the starts that did not get ready in a row are none again.
export async function resetStartCounter(paths: HostPaths): Promise<void> {
  await removeSelfFiles(paths, ['starts']);
}

// Removes files of self/ (each once reported, or a commit's), then fsyncs the folder so that
// the launcher's next start cannot find one again after a power cut. Absent ones are fine.
export async function removeSelfFiles(paths: HostPaths, names: SelfFile[]): Promise<void> {
  let removed = false;
  for (const name of names) {
    const file = selfFile(paths, name);
    const st = await fsp.lstat(file).catch(() => null);
    if (!st) continue;
    await fsp.rm(file, { recursive: true, force: true });
    removed = true;
  }
  if (removed) await fsyncDir(paths.selfDir);
}
