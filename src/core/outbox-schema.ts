import * as z from './zod-mini.js';
import { intSchema, keyIdSchema } from './names.js';
import { envelopeSchema } from './release-schemas.js';

export const OUTBOX_SCHEMA_VERSION = 1;

// /var/lib/steward-agent/outbox.json (docs/design.md §6): the receipts the agent still has to relay.
// `helperKeyId` is null until the first receipt is taken; `highestSeq` is 0 until then.
// `pending` is sorted by the receipts' seq, strictly ascending, every one at most `highestSeq`
// (the agent's Outbox checks the order).
export const outboxFileSchema = z.strictObject({
  schemaVersion: z.literal(OUTBOX_SCHEMA_VERSION),
  helperKeyId: z.nullable(keyIdSchema),
  highestSeq: intSchema(0),
  pending: z.array(envelopeSchema),
});
export type OutboxFile = z.infer<typeof outboxFileSchema>;
