import { compareVersions } from '../../core/version.js';
import { objectsDir } from '../../core/paths.js';
import { logger } from '../../platform/log.js';
import { keepingChecks } from '../../platform/object-checks.js';
import { collectGarbage } from '../../platform/object-store.js';
import { readAppState } from '../state/app-state.js';
import { listVersionDirs, readCurrent, removeRelease } from '../release-store.js';
import { collectKeptIndexes } from '../stage/kept-indexes.js';
import type { UpdateContext } from './context.js';

const log = logger('helper:prune');

// Keeps `keep` versions (docs/design.md §4 "Prune"): always current and previous, then the highest
// others; removes the rest, each marker first and then its tree. Runs under the app's lock,
// so no version of the app is being staged meanwhile. Returns the versions removed.
export async function pruneReleases(ctx: UpdateContext, app: string, keep?: number): Promise<string[]> {
  const limit = Math.max(2, keep ?? ctx.config.apps[app]?.keepReleases ?? 3);
  const [state, cur, versions] = await Promise.all([readAppState(ctx.paths, app), readCurrent(ctx.paths, app), listVersionDirs(ctx.paths, app)]);
  const pinned = new Set<string>();
  if (cur.state === 'valid') pinned.add(cur.version);
  else if (cur.state === 'invalid' && cur.target) pinned.add(cur.target.replace(/^versions\//, ''));
  if (state.previous) pinned.add(state.previous);
  const others = versions.filter((v) => !pinned.has(v)).sort((a, b) => compareVersions(b, a));
  const victims = others.slice(Math.max(0, limit - pinned.size));
  if (victims.length === 0) return victims;
  // Removing a tree unlinks names of objects the kept trees share, which changes their change
  // times: keepingChecks notes again those that were unchanged before (docs/design.md §20.3).
  await keepingChecks(objectsDir(ctx.paths, app), async () => {
    for (const v of victims) {
      await removeRelease(ctx.paths, app, v, () => ctx.faults.hit('during-prune'));
      log('pruned app=%s version=%s', app, v);
    }
    // Then the objects no kept tree links (docs/design.md §20): after the trees, so that a crash in
    // between leaves objects the next start or prune collects, never a tree without its files.
    const gc = await collectGarbage(objectsDir(ctx.paths, app));
    if (gc.removed.length > 0) log('objects collected app=%s removed=%d bytes=%d', app, gc.removed.length, gc.bytes);
    await collectKeptIndexes(ctx.paths, app);
  });
  return victims;
}
