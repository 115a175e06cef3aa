import { objectsDir } from '../../core/paths.js';
import { versionDir } from '../../core/paths.js';
import { treeDigestOf } from '../../core/tree-listing.js';
import type { VerifyAnswer, VerifyProblem } from '../../protocol/answers.js';
import { CheckedObjects } from '../../platform/object-checks.js';
import { checkObject, listObjects } from '../../platform/object-store.js';
import { rereadTree } from '../../platform/tree-reread.js';
import { logger } from '../../platform/log.js';
import type { HostPaths } from '../../core/paths.js';
import { inspectMarker, listVersionDirs } from '../release-store.js';

const log = logger('helper:verify');

// `agentctl verify [APP]` (docs/design.md §20) for one app, under its lock: every object's bytes
// hashed again against its name, every staged tree (objects-linked or staged before objects)
// read back and its digest compared with its marker's. Changes nothing but the record of checked
// objects (§20.3): an object found changed is forgotten there, so that the next stage that needs
// it hashes it (and replaces it) even if its change time was kept (a disk's own corruption).
export async function verifyApp(paths: HostPaths, app: string): Promise<VerifyAnswer['apps'][number]> {
  const problems: VerifyProblem[] = [];
  const { objects, strays } = await listObjects(objectsDir(paths, app));
  let objectBytes = 0;
  const record = CheckedObjects.load(objectsDir(paths, app));
  let forgot = false;
  for (const o of objects) {
    const check = await checkObject(o.file, o.name);
    if (check.ok) objectBytes += check.size;
    else {
      problems.push({ kind: 'object', name: o.name, why: check.why });
      record.forget(o.name);
      forgot = true;
    }
  }
  if (forgot) record.save();
  for (const s of strays) problems.push({ kind: 'object', name: s, why: 'is not an object name (a leftover the next start removes)' });
  let trees = 0;
  for (const version of await listVersionDirs(paths, app)) {
    const m = await inspectMarker(paths, app, version);
    if (m.state !== 'valid') {
      if (m.state !== 'newer') problems.push({ kind: 'tree', name: version, why: `has no valid marker (${m.state === 'invalid' ? m.why : 'absent'})` });
      continue;
    }
    trees++;
    try {
      const digest = treeDigestOf(await rereadTree(versionDir(paths, app, version)));
      if (digest !== m.marker.treeDigest) problems.push({ kind: 'tree', name: version, why: `its files are not the ones staged (tree digest ${digest}, the marker says ${m.marker.treeDigest})` });
    } catch (err) {
      problems.push({ kind: 'tree', name: version, why: `could not be read back: ${(err as Error).message}` });
    }
  }
  for (const p of problems) log('verify found app=%s %s=%s: %s', app, p.kind, p.name, p.why);
  return { app, objects: objects.length, objectBytes, trees, problems };
}
