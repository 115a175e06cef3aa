import { requireApp } from '../../host/config.js';
import { quarantineInForce } from '../../core/quarantine.js';
import type { HostConfig } from '../../core/config-schema.js';
import { stagingDir, type HostPaths } from '../../core/paths.js';
import { promises as fsp } from 'node:fs';
import type { ReleaseInfo, ReleasesResult } from '../../protocol/answers.js';
import { readAppState } from '../state/app-state.js';
import { listVersionDirs, readCurrent, readMarker } from '../release-store.js';

// Lists an app's staged versions with their markers, current/previous and quarantine.
export async function listReleases(paths: HostPaths, config: HostConfig, app: string, now: number): Promise<ReleasesResult> {
  requireApp(config, app);
  const [state, cur, versions] = await Promise.all([readAppState(paths, app), readCurrent(paths, app), listVersionDirs(paths, app)]);
  const current = cur.state === 'valid' ? cur.version : null;
  const releases: ReleaseInfo[] = [];
  const capMs = config.apps[app]?.quarantine.capMs ?? Infinity;
  for (const version of versions) {
    const m = await readMarker(paths, app, version);
    const q = state.quarantine[version];
    releases.push({
      version,
      valid: !!m,
      current: version === current,
      previous: version === state.previous,
      signed: m?.signed ?? null,
      keyId: m?.keyId ?? null,
      tarballIntegrity: m?.tarballIntegrity ?? null,
      stagedAt: m?.stagedAt ?? null,
      quarantine: q ? { ...q, inForce: quarantineInForce(q, now, capMs) } : null,
    });
  }
  const staging = await fsp.readdir(stagingDir(paths, app)).catch(() => [] as string[]);
  return {
    app,
    current,
    currentState: cur.state,
    previous: state.previous,
    highestActive: state.highestActive,
    releases,
    staging: staging.sort(),
  };
}
