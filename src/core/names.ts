import { z } from 'zod';
import { APP_NAME_RE, ATTEMPT_ID_RE, INTEGRITY_RE } from './name-checks.js';
import { isVersion, MAX_VERSION_LENGTH, VERSION_RE } from './version.js';

export { AGENT_APP, APP_NAME_RE, ATTEMPT_ID_RE, INTEGRITY_RE, isAppName } from './name-checks.js';

export const appNameSchema = z.string().regex(APP_NAME_RE, 'app names are [a-z0-9][a-z0-9_-]{0,62}');
export const versionSchema = z
  .string()
  .max(MAX_VERSION_LENGTH)
  .regex(VERSION_RE, 'versions are semver without build metadata (1.2.3 or 1.2.3-rc.1)');
export const attemptIdSchema = z.string().regex(ATTEMPT_ID_RE, 'attempt ids match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$');
export const integritySchema = z.string().regex(INTEGRITY_RE, 'integrity is one SRI token sha512-<base64>');
export const epochMsSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export { isVersion };
