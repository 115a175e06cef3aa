import { StewardError } from '../../core/errors.js';
import { appNameSchema, versionSchema } from '../../core/names.js';

// Checks an app name and version given by an operator (a USAGE error, exit 2, when bad).
export function checkNames(app: string, version?: string): void {
  if (!appNameSchema.safeParse(app).success) throw new StewardError('USAGE', `${JSON.stringify(app)} is not an app name ([a-z0-9][a-z0-9_-]{0,62})`);
  if (version !== undefined && !versionSchema.safeParse(version).success) throw new StewardError('USAGE', `${JSON.stringify(version)} is not a version (semver without build metadata)`);
}
