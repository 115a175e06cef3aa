// The directive (docs/design.md §21.1), Uptane's director: steward-control's online director key
// says that one node runs one app's version, for one attempt, within a day. The repository's
// delegations say which releases exist and are the app's own; a directive only picks among
// them for a node, so a stolen director key can make a node run any of an app's signed
// releases, never one the app's keys did not sign. An envelope (docs/design.md §6) under the
// domain `steward-directive-v1`, whose `-v1` versions the payload.
import * as z from '../zod-mini.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, versionSchema } from '../names.js';

export const directivePayloadSchema = z.strictObject({
  nodeId: z.string().check(z.minLength(1), z.maxLength(128)),
  app: appNameSchema,
  version: versionSchema,
  attemptId: attemptIdSchema,
  // Epoch ms: when it was signed, and until when it holds.
  issuedAt: epochMsSchema,
  notAfter: epochMsSchema,
});
export type DirectivePayload = z.infer<typeof directivePayloadSchema>;

// A directive holds at most a day from its signing: it is for the attempt at hand.
export const MAX_DIRECTIVE_LIFETIME_MS = 24 * 3_600_000;
// How far a directive's issuedAt may be ahead of the host's clock: the clock difference a
// heartbeat is accepted with (docs/design.md §6, CLOCK_SKEW).
export const DIRECTIVE_CLOCK_SKEW_MS = 5 * 60_000;
