import { z } from 'zod';
import { epochMsSchema, versionSchema } from './names.js';
import { APP_STATE_SCHEMA_VERSION } from './state-check.js';

// The state's constants live in the zod-free state-check.ts (issue 8, row 5).
export { APP_STATE_SCHEMA_VERSION, emptyAppState } from './state-check.js';

const holdSchema = z.strictObject({
  by: z.string().max(256),
  at: epochMsSchema,
  reason: z.string().max(512),
});

const blockedSchema = z.strictObject({
  reason: z.string().max(64),
  message: z.string().max(512).optional(),
  since: epochMsSchema,
});

// One version's quarantine (also a journal's prior.quarantine).
export const quarantineEntrySchema = z.strictObject({
  failures: z.number().int().nonnegative(),
  retryAfter: epochMsSchema,
});

// state/<app>.json (DESIGN §2): previous, highest active version, quarantine, hold, blocked.
export const appStateSchema = z.strictObject({
  schemaVersion: z.literal(APP_STATE_SCHEMA_VERSION),
  previous: versionSchema.nullable(),
  highestActive: versionSchema.nullable(),
  quarantine: z.record(versionSchema, quarantineEntrySchema),
  hold: holdSchema.nullable(),
  blocked: blockedSchema.nullable(),
});
export type AppState = z.infer<typeof appStateSchema>;
