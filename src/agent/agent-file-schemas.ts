// The schemas of the agent's seq.json, acted.json and control-plane.json (its enrollment.json is
// enrollment-schema.ts, its outbox core/outbox-schema.ts).
import * as z from '../core/zod-mini.js';
import { controlPlaneUrlListSchema } from '../core/control-plane-urls.js';
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

export const CONTROL_PLANE_SCHEMA_VERSION = 1;
// control-plane.json: the control-plane URLs this node enrolled with (`agentctl enroll
// --control-plane`, repeated), and the one that last answered, which the agent starts from.
// Only agents that know lists read it; older ones use enrollment.json's single URL.
export const controlPlaneFileSchema = z.strictObject({
  schemaVersion: z.literal(CONTROL_PLANE_SCHEMA_VERSION),
  urls: z.optional(controlPlaneUrlListSchema),
  answered: z.optional(z.strictObject({ url: z.url(), since: epochMsSchema })),
});
export type ControlPlaneFile = z.infer<typeof controlPlaneFileSchema>;
