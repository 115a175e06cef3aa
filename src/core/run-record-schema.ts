import * as z from './zod-mini.js';
import { appNameSchema, epochMsSchema, intSchema, versionSchema } from './names.js';

export const RUN_RECORD_SCHEMA_VERSION = 1;

// An instance token (`instance` below): 128 random bits in lowercase hex.
export const INSTANCE_TOKEN_RE = /^[0-9a-f]{32}$/;

export const procIdentitySchema = z.strictObject({
  pid: intSchema(1),
  startTicks: intSchema(0),
  bootId: z.string().check(z.minLength(1), z.maxLength(64)),
});

const exitSchema = z.strictObject({ code: z.nullable(z.number().check(z.int())), signal: z.nullable(z.string().check(z.maxLength(32))) });

// The supervisor's part of the record (src/core/supervisor-decision.ts SupervisorRecordState).
export const supervisorStateSchema = z.strictObject({
  state: z.enum(['running', 'waiting', 'error', 'stopped']),
  attempts: intSchema(0),
  lastStartAt: z.nullable(epochMsSchema),
  lastExitAt: z.nullable(epochMsSchema),
  nextAttemptAt: z.nullable(epochMsSchema),
  lastExit: z.nullable(exitSchema),
  giveUpReason: z.nullable(z.string().check(z.maxLength(1024))),
});

// supervisor/<app>.json: what should run and which process is it.
export const runRecordSchema = z.strictObject({
  schemaVersion: z.literal(RUN_RECORD_SCHEMA_VERSION),
  app: appNameSchema,
  expected: z.enum(['running', 'stopped']),
  version: z.nullable(versionSchema),
  process: z.nullable(procIdentitySchema),
  startedAt: z.nullable(epochMsSchema),
  // Where the current process's output starts in the app's log file.
  logOffset: z.optional(intSchema(0)),
  // The app's instance token: a random secret made before the app's first spawn and kept, put in
  // the environment of every process steward spawns for it (STEWARD_INSTANCE). Only root and the
  // app's own processes know it, so a process of the app's user that holds it is the app's.
  instance: z.optional(z.string().check(z.regex(INSTANCE_TOKEN_RE))),
  // The respawn budget and state (absent in records written before the supervisor).
  supervisor: z.optional(supervisorStateSchema),
});
export type RunRecord = z.infer<typeof runRecordSchema>;
