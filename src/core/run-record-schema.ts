import { z } from 'zod';
import { appNameSchema, epochMsSchema, versionSchema } from './names.js';
import { INSTANCE_TOKEN_RE, RUN_RECORD_SCHEMA_VERSION } from './run-record-check.js';

// The record's schema version lives in the zod-free run-record-check.ts (issue 8, row 5).
export { RUN_RECORD_SCHEMA_VERSION } from './run-record-check.js';

export const procIdentitySchema = z.strictObject({
  pid: z.number().int().positive(),
  startTicks: z.number().int().nonnegative(),
  bootId: z.string().min(1).max(64),
});

const exitSchema = z.strictObject({ code: z.number().int().nullable(), signal: z.string().max(32).nullable() });

// The supervisor's part of the record (src/core/supervisor-decision.ts SupervisorRecordState).
export const supervisorStateSchema = z.strictObject({
  state: z.enum(['running', 'waiting', 'error', 'stopped']),
  attempts: z.number().int().nonnegative(),
  lastStartAt: epochMsSchema.nullable(),
  lastExitAt: epochMsSchema.nullable(),
  nextAttemptAt: epochMsSchema.nullable(),
  lastExit: exitSchema.nullable(),
  giveUpReason: z.string().max(1024).nullable(),
});

// supervisor/<app>.json: what should run and which process is it.
export const runRecordSchema = z.strictObject({
  schemaVersion: z.literal(RUN_RECORD_SCHEMA_VERSION),
  app: appNameSchema,
  expected: z.enum(['running', 'stopped']),
  version: versionSchema.nullable(),
  process: procIdentitySchema.nullable(),
  startedAt: epochMsSchema.nullable(),
  // Where the current process's output starts in the app's log file.
  logOffset: z.number().int().nonnegative().optional(),
  // The app's instance token: a random secret made before the app's first spawn and kept, put in
  // the environment of every process steward spawns for it (STEWARD_INSTANCE). Only root and the
  // app's own processes know it, so a process of the app's user that holds it is the app's.
  instance: z.string().regex(INSTANCE_TOKEN_RE).optional(),
  // The respawn budget and state (absent in records written before the supervisor).
  supervisor: supervisorStateSchema.optional(),
});
export type RunRecord = z.infer<typeof runRecordSchema>;
