// The signed downgrade authorization of docs/design.md §18 ("Back to a known-good version"): a
// release key allowed for an app says that hosts may go back to one version of it, below the
// highest version they ran, until `notAfter`. An envelope (docs/design.md §6) under the domain
// `steward-downgrade-v1`, whose `-v1` versions the payload: another payload comes with another
// domain, so no `v` field is needed in it.
import * as z from './zod-mini.js';
import { appNameSchema, epochMsSchema, versionSchema } from './names.js';

export const downgradePayloadSchema = z.strictObject({
  app: appNameSchema,
  version: versionSchema,
  // Epoch ms: the authorization holds while the helper's clock is before it.
  notAfter: epochMsSchema,
});
export type DowngradePayload = z.infer<typeof downgradePayloadSchema>;

export { allowDowngradeCommand, DEFAULT_DOWNGRADE_DAYS, MAX_DOWNGRADE_AHEAD_MS, MAX_DOWNGRADE_DAYS } from './downgrade-limits.js';
