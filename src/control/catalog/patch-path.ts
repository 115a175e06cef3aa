// Where the catalog keeps the static zstd patches of an app and its indexes' deltas (docs/design.md
// §20.5): `<artifacts>/<app>/<to>.from-<from>.patch`, `<to>.index.json.from-<from>.zst`.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { isAppName } from '../../core/name-checks.js';
import { isVersion } from '../../core/version.js';

export function patchPath(artifactsDir: string, app: string, to: string, from: string): string {
  if (!isAppName(app) || !isVersion(to) || !isVersion(from)) throw new StewardError('USAGE', `${app} ${from} -> ${to} is not an app and two versions`);
  return path.join(artifactsDir, app, `${to}.from-${from}.patch`);
}

// Where the zstd delta of app@to's index from app@from's is kept.
export function indexDeltaPath(artifactsDir: string, app: string, to: string, from: string): string {
  if (!isAppName(app) || !isVersion(to) || !isVersion(from)) throw new StewardError('USAGE', `${app} ${from} -> ${to} is not an app and two versions`);
  return path.join(artifactsDir, app, `${to}.index.json.from-${from}.zst`);
}

// Removes every patch and index delta to or from app@version (release remove): nothing serves a patch whose
// release is gone.
export async function removePatchesOf(artifactsDir: string, app: string, version: string): Promise<void> {
  const dir = path.join(artifactsDir, app);
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  for (const n of names) {
    const m = /^(.+)\.index\.json\.from-(.+)\.zst$/.exec(n) ?? /^(.+)\.from-(.+)\.patch$/.exec(n);
    if (m && (m[1] === version || m[2] === version)) await fsp.rm(path.join(dir, n), { force: true });
  }
}
