// The schemas of the agent's seq.json and acted.json (its enrollment.json is enrollment-schema.ts,
// its outbox core/outbox-schema.ts).
import { z } from '../core/zod-mini.js';
import { attemptIdSchema, epochMsSchema, intSchema } from '../core/names.js';

export const SEQ_SCHEMA_VERSION = 1;
// seq.json: the highest heartbeat seq this agent has used.
export const seqFileSchema = z.strictObject({ schemaVersion: z.literal(SEQ_SCHEMA_VERSION), lastSeq: intSchema(0) });
export type SeqFile = z.infer<typeof seqFileSchema>;

export const ACTED_SCHEMA_VERSION = 1;
const actedEntrySchema = z.strictObject({
  attemptId: attemptIdSchema,
  app: z.string().check(z.maxLength(64)),
  at: epochMsSchema,
  answer: z.string().check(z.maxLength(64)),
});
export type ActedEntry = z.infer<typeof actedEntrySchema>;
// acted.json: the attempts the agent handed to the helper and had answered.
export const actedFileSchema = z.strictObject({ schemaVersion: z.literal(ACTED_SCHEMA_VERSION), acted: z.array(actedEntrySchema) });
export type ActedFile = z.infer<typeof actedFileSchema>;
