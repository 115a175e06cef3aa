import * as z from './zod-mini.js';
import { APP_NAME_RE, ATTEMPT_ID_RE, INTEGRITY_RE } from './name-checks.js';
import { isVersion, MAX_VERSION_LENGTH, VERSION_RE } from './version.js';

export { AGENT_APP, APP_NAME_RE, ATTEMPT_ID_RE, INTEGRITY_RE, isAppName } from './name-checks.js';

export const appNameSchema = z.string().check(z.regex(APP_NAME_RE, 'app names are [a-z0-9][a-z0-9_-]{0,62}'));
export const versionSchema = z.string().check(z.maxLength(MAX_VERSION_LENGTH), z.regex(VERSION_RE, 'versions are semver without build metadata (1.2.3 or 1.2.3-rc.1)'));
export const attemptIdSchema = z.string().check(z.regex(ATTEMPT_ID_RE, 'attempt ids match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'));
export const integritySchema = z.string().check(z.regex(INTEGRITY_RE, 'integrity is one SRI token sha512-<base64>'));
// A time in epoch milliseconds: a safe integer >= 0.
export const epochMsSchema = z.number().check(z.int(), z.minimum(0));
// A safe integer in [min, max] (an int is a safe integer).
export const intSchema = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().check(z.int(), z.minimum(min), z.maximum(max));
// A string of min..max UTF-16 units.
export const stringSchema = (min: number, max: number) => z.string().check(z.minLength(min), z.maxLength(max));
// A key id: 16 lowercase hex characters (the first 8 bytes of the key's SHA-256).
export const keyIdSchema = z.string().check(z.regex(/^[0-9a-f]{16}$/, 'keyId is 16 lowercase hex characters'));

export { isVersion };
