import { z } from 'zod';
import { isVersion, MAX_VERSION_LENGTH, VERSION_RE } from './version.js';

// The app the agent itself is installed as (issue 6): its releases are only ever signed ones.
export const AGENT_APP = 'steward-agent';

// App names become folder names and unit names (`steward-app-<app>`): lowercase
// letters, digits, `-` and `_`, starting with a letter or digit.
export const APP_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const ATTEMPT_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
// Exactly one SRI token with a sha512 digest (64 bytes, 88 base64 characters).
export const INTEGRITY_RE = /^sha512-[A-Za-z0-9+/]{86}==$/;

export const appNameSchema = z.string().regex(APP_NAME_RE, 'app names are [a-z0-9][a-z0-9_-]{0,62}');
export const versionSchema = z
  .string()
  .max(MAX_VERSION_LENGTH)
  .regex(VERSION_RE, 'versions are semver without build metadata (1.2.3 or 1.2.3-rc.1)');
export const attemptIdSchema = z.string().regex(ATTEMPT_ID_RE, 'attempt ids match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$');
export const integritySchema = z.string().regex(INTEGRITY_RE, 'integrity is one SRI token sha512-<base64>');
export const epochMsSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export { isVersion };

// Whether a string is a valid app name.
export function isAppName(value: unknown): value is string {
  return typeof value === 'string' && APP_NAME_RE.test(value);
}
