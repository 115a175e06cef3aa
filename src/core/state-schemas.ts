import * as z from './zod-mini.js';
import { epochMsSchema, intSchema, versionSchema } from './names.js';

export const APP_STATE_SCHEMA_VERSION = 1;

const holdSchema = z.strictObject({
  by: z.string().check(z.maxLength(256)),
  at: epochMsSchema,
  reason: z.string().check(z.maxLength(512)),
});

const blockedSchema = z.strictObject({
  reason: z.string().check(z.maxLength(64)),
  message: z.optional(z.string().check(z.maxLength(512))),
  since: epochMsSchema,
});

// One version's quarantine (also a journal's prior.quarantine).
export const quarantineEntrySchema = z.strictObject({
  failures: intSchema(0),
  retryAfter: epochMsSchema,
});

// state/<app>.json (docs/design.md §2): previous, highest active version, quarantine, hold, blocked.
export const appStateSchema = z.strictObject({
  schemaVersion: z.literal(APP_STATE_SCHEMA_VERSION),
  previous: z.nullable(versionSchema),
  highestActive: z.nullable(versionSchema),
  quarantine: z.record(versionSchema, quarantineEntrySchema),
  hold: z.nullable(holdSchema),
  blocked: z.nullable(blockedSchema),
});
export type AppState = z.infer<typeof appStateSchema>;

// The state of an app that has never been updated.
export function emptyAppState(): AppState {
  return { schemaVersion: APP_STATE_SCHEMA_VERSION, previous: null, highestActive: null, quarantine: {}, hold: null, blocked: null };
}
