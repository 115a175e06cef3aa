import { z } from 'zod';
import { appNameSchema, epochMsSchema, versionSchema } from './names.js';

export const RUN_RECORD_SCHEMA_VERSION = 1;

export const procIdentitySchema = z.strictObject({
  pid: z.number().int().positive(),
  startTicks: z.number().int().nonnegative(),
  bootId: z.string().min(1).max(64),
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
});
export type RunRecord = z.infer<typeof runRecordSchema>;
