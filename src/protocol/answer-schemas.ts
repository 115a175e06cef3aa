import * as z from '../core/zod-mini.js';
import { REASON_CODES, type ReasonCode } from '../core/errors.js';

// The helper's answer lines (docs/design.md §7), as the client reads them: a line is hostile input. Apart
// from the request schemas (schemas.ts), so that `agentctl status` loads only these.

// A request's id, echoed in its answer: a string of at most 128 characters or a safe integer.
export const idSchema = z.union([z.string().check(z.maxLength(128)), z.number().check(z.int())]);

export const progressEventSchema = z.object({
  id: z.nullable(idSchema),
  event: z.literal('progress'),
  attemptId: z.string(),
  phase: z.string(),
  bytes: z.optional(z.number()),
  total: z.optional(z.number()),
});
export type ProgressEvent = z.infer<typeof progressEventSchema>;

export const errorBodySchema = z.object({
  code: z.enum(REASON_CODES as unknown as [ReasonCode, ...ReasonCode[]]),
  message: z.string(),
  attemptId: z.optional(z.string()),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

export const responseSchema = z.union([
  z.object({ id: z.nullable(idSchema), ok: z.literal(true), result: z.unknown() }),
  z.object({ id: z.nullable(idSchema), ok: z.literal(false), error: errorBodySchema }),
]);
export type Response = z.infer<typeof responseSchema>;
