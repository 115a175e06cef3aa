import { z } from 'zod';
import { JOURNAL_OUTCOMES, JOURNAL_SCHEMA_VERSION } from './journal-check.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, integritySchema, versionSchema } from './names.js';
import { quarantineEntrySchema } from './state-schemas.js';

// The journal's constants live in the zod-free journal-check.ts (issue 8, row 5).
export { isTerminal, JOURNAL_OUTCOMES, JOURNAL_SCHEMA_VERSION, TERMINAL_OUTCOMES, type JournalOutcome } from './journal-check.js';

export const reasonSchema = z.strictObject({
  code: z.string().max(64),
  message: z.string().max(2048),
});
export type Reason = z.infer<typeof reasonSchema>;

// What the app's state said before the attempt. A verdict is two writes (state, then the
// journal); recovery of an attempt whose journal never left `activating` puts these back, so a
// version that never reached `active` cannot stay the highest active one.
export const priorStateSchema = z.strictObject({
  previous: versionSchema.nullable(),
  highestActive: versionSchema.nullable(),
  quarantine: quarantineEntrySchema.nullable(),
});

// journal/<app>.json (DESIGN §4): the update transaction of one app.
export const journalSchema = z.strictObject({
  schemaVersion: z.literal(JOURNAL_SCHEMA_VERSION),
  attemptId: attemptIdSchema,
  app: appNameSchema,
  fromVersion: versionSchema.nullable(),
  targetVersion: versionSchema,
  integrity: integritySchema,
  outcome: z.enum(JOURNAL_OUTCOMES),
  startedAt: epochMsSchema,
  updatedAt: epochMsSchema,
  retryAfter: epochMsSchema.optional(),
  rollbackHealthy: z.boolean().optional(),
  reason: reasonSchema.optional(),
  logFile: z.string().max(4096).optional(),
  prior: priorStateSchema.optional(),
});
export type Journal = z.infer<typeof journalSchema>;
