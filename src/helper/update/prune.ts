import { compareVersions } from '../../core/version.js';
import { logger } from '../../platform/log.js';
import { readAppState } from '../state/app-state.js';
import { listVersionDirs, readCurrent, removeRelease } from '../release-store.js';
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
  for (const v of victims) {
    await removeRelease(ctx.paths, app, v, () => ctx.faults.hit('during-prune'));
    log('pruned app=%s version=%s', app, v);
  }
  return victims;
}
