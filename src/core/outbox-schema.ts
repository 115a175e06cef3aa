import { z } from 'zod';
import { envelopeSchema } from './release-schemas.js';

export const OUTBOX_SCHEMA_VERSION = 1;

// /var/lib/steward-agent/outbox.json (DESIGN §6): the receipts the agent still has to relay.
// `helperKeyId` is null until the first receipt is taken; `highestSeq` is 0 until then.
// `pending` is sorted by the receipts' seq, strictly ascending, every one at most `highestSeq`.
export const outboxFileSchema = z.strictObject({
  schemaVersion: z.literal(OUTBOX_SCHEMA_VERSION),
  helperKeyId: z.string().regex(/^[0-9a-f]{16}$/).nullable(),
  highestSeq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  pending: z.array(envelopeSchema),
});
export type OutboxFile = z.infer<typeof outboxFileSchema>;
