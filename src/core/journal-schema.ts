import * as z from './zod-mini.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, integritySchema, versionSchema } from './names.js';
import { quarantineEntrySchema } from './state-schemas.js';
import { procIdentitySchema } from './run-record-schema.js';

export const JOURNAL_SCHEMA_VERSION = 1;

// Where an attempt is: `activating` until a verdict is durable, then one terminal outcome.
export const JOURNAL_OUTCOMES = ['activating', 'active', 'rolled-back', 'failed'] as const;
export type JournalOutcome = (typeof JOURNAL_OUTCOMES)[number];
export const TERMINAL_OUTCOMES = ['active', 'rolled-back', 'failed'] as const;

// Whether an outcome is terminal (the attempt is over).
export function isTerminal(outcome: JournalOutcome): outcome is (typeof TERMINAL_OUTCOMES)[number] {
  return outcome !== 'activating';
}

export const reasonSchema = z.strictObject({
  code: z.string().check(z.maxLength(64)),
  message: z.string().check(z.maxLength(2048)),
});
export type Reason = z.infer<typeof reasonSchema>;

// What the app's state said before the attempt. A verdict is two writes (state, then the
// journal); recovery of an attempt whose journal never left `activating` puts these back, so a
// version that never reached `active` cannot stay the highest active one.
export const priorStateSchema = z.strictObject({
  previous: z.nullable(versionSchema),
  highestActive: z.nullable(versionSchema),
  quarantine: z.nullable(quarantineEntrySchema),
});

// journal/<app>.json (docs/design.md §4): the update transaction of one app.
export const journalSchema = z.strictObject({
  schemaVersion: z.literal(JOURNAL_SCHEMA_VERSION),
  attemptId: attemptIdSchema,
  app: appNameSchema,
  fromVersion: z.nullable(versionSchema),
  targetVersion: versionSchema,
  integrity: integritySchema,
  outcome: z.enum(JOURNAL_OUTCOMES),
  startedAt: epochMsSchema,
  updatedAt: epochMsSchema,
  retryAfter: z.optional(epochMsSchema),
  rollbackHealthy: z.optional(z.boolean()),
  reason: z.optional(reasonSchema),
  logFile: z.optional(z.string().check(z.maxLength(4096))),
  prior: z.optional(priorStateSchema),
  // Only while `activating`, for an app with sockets (docs/design.md §17 "Zero-downtime handover"):
  // where its handover is and both processes. `start`: the new process is being started beside
  // `old`; `ready`: `new` said it is ready; `drain`: `old` is being stopped. Recovery stops every
  // process of the app whatever the phase and starts the version `current` is put back to, on the
  // sockets the keeper still holds. A terminal journal never has it.
  handover: z.optional(
    z.strictObject({
      phase: z.enum(['start', 'ready', 'drain']),
      old: procIdentitySchema,
      new: z.optional(procIdentitySchema),
    }),
  ),
});
export type Journal = z.infer<typeof journalSchema>;
