// The names, paths and lifetimes of a fleet's TUF repository (docs/design.md §21.1): one
// repository per fleet, the top-level roles of the TUF specification, and one delegated role per
// app that alone may sign that app's releases.
import { isAppName } from '../name-checks.js';
import { isVersion } from '../version.js';

// The TUF specification version the metadata claims (the one @tufjs/models 4.1 writes and reads).
export const TUF_SPEC_VERSION = '1.0.31';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

// Offline roles (root, targets and each app's delegation) default to 2 of 3 keys.
export const DEFAULT_ROOT_KEYS = 3;
export const DEFAULT_THRESHOLD = 2;

// The timestamp is signed online by steward-control and expires a day after signing, so a host
// cut off from new timestamps stops trusting what it last saw within a day (a freeze attack is
// bounded by it); the control plane signs a new one every hour, long before that.
export const TIMESTAMP_LIFETIME_MS = DAY_MS;
export const TIMESTAMP_RESIGN_MS = HOUR_MS;
// Default expiries: the offline roles a year (a ceremony a year at least), the online snapshot a
// week (it is re-signed with every release, and at least that often).
export const ROOT_LIFETIME_MS = 365 * DAY_MS;
export const TARGETS_LIFETIME_MS = 365 * DAY_MS;
export const APP_DELEGATION_LIFETIME_MS = 365 * DAY_MS;
export const SNAPSHOT_LIFETIME_MS = 7 * DAY_MS;

// The signed unrecognized fields steward adds (TUF keeps them in the signed bytes).
// On the timestamp: when it was signed (ISO 8601 UTC), so a host can report its age.
export const SIGNED_AT_FIELD = 'x-steward-signed-at';
// On the root: the director's keys ({keyids, threshold: 1}), whose directives name what a node runs.
export const DIRECTOR_FIELD = 'x-steward-director';

const APP_ROLE_PREFIX = 'app.';

// The delegated role that signs `app`'s releases. An app name never holds a dot, so this never
// collides with a top-level role name nor with another app's role.
export function delegatedRoleName(app: string): string {
  if (!isAppName(app)) throw new TypeError(`not an app name: ${JSON.stringify(app)}`);
  return APP_ROLE_PREFIX + app;
}

// The app a delegated role signs for, or null for any other role name.
export function appOfRole(role: string): string | null {
  if (!role.startsWith(APP_ROLE_PREFIX)) return null;
  const app = role.slice(APP_ROLE_PREFIX.length);
  return isAppName(app) ? app : null;
}

// The path pattern of an app's delegation: `<app>/<version>/<file>`, one level each (TUF's
// fnmatch-style `*` does not cross a `/`), so no other app's targets match it.
export function delegatedPathPattern(app: string): string {
  if (!isAppName(app)) throw new TypeError(`not an app name: ${JSON.stringify(app)}`);
  return `${app}/*/*`;
}

function releasePath(app: string, version: string, file: string): string {
  if (!isAppName(app)) throw new TypeError(`not an app name: ${JSON.stringify(app)}`);
  if (!isVersion(version)) throw new TypeError(`not a version: ${JSON.stringify(version)}`);
  return `${app}/${version}/${file}`;
}

// The target holding the canonical bytes P of a release's manifest payload (docs/design.md §6).
export function manifestTargetPath(app: string, version: string): string {
  return releasePath(app, version, 'manifest.json');
}

// The target holding a release's file index (docs/design.md §20).
export function indexTargetPath(app: string, version: string): string {
  return releasePath(app, version, 'index.json');
}

// The target holding a downgrade authorization's canonical {app, version, notAfter} (docs/design.md §18).
export function downgradeTargetPath(app: string, version: string): string {
  return releasePath(app, version, 'downgrade.json');
}

// TUF's time format: ISO 8601 UTC to the second, no fraction ("2030-01-01T00:00:00Z").
export function tufTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
