import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { isAppName } from '../../core/name-checks.js';
import { isVersion } from '../../core/version.js';

// The folder that keeps a SQLite database's release tarballs: next to it, `<db>.artifacts/`.
export function artifactsDirOf(dbFile: string): string {
  return path.resolve(dbFile) + '.artifacts';
}

// Where the tarball of app@version lives under `artifactsDir`. The names are checked before any
// path is built.
export function artifactPath(artifactsDir: string, app: string, version: string): string {
  if (!isAppName(app)) throw new StewardError('USAGE', `${JSON.stringify(app)} is not an app name`);
  if (!isVersion(version)) throw new StewardError('USAGE', `${JSON.stringify(version)} is not a version`);
  return path.join(artifactsDir, app, `${version}.tgz`);
}
