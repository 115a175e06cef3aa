import { StewardError } from '../core/errors.js';
import { APP_NAME_RE, ATTEMPT_ID_RE } from '../core/name-checks.js';
import { isVersion } from '../core/version.js';

// The words of a command line checked before anything is sent (docs/design.md §8): a malformed one is a
// usage mistake (USAGE, exit 2), not a request the helper refuses (BAD_REQUEST, exit 1).

// `app` as an app name, or USAGE.
export function appArg(app: string): string {
  if (!APP_NAME_RE.test(app)) throw new StewardError('USAGE', `${JSON.stringify(app)} is not an app name (lowercase letters, digits, - and _; at most 63)`);
  return app;
}

// `version` as a version (semver without build metadata), or USAGE naming `what`.
export function versionArg(version: string, what = 'version'): string {
  if (!isVersion(version)) throw new StewardError('USAGE', `${what} ${JSON.stringify(version)} is not a version (1.2.3 or 1.2.3-rc.1, no build metadata)`);
  return version;
}

// `--attempt-id` as an attempt id, or USAGE.
export function attemptIdArg(id: string): string {
  if (!ATTEMPT_ID_RE.test(id)) throw new StewardError('USAGE', `--attempt-id ${JSON.stringify(id)} must match ${ATTEMPT_ID_RE.source}`);
  return id;
}
