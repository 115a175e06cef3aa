import { z } from 'zod';
import { RELAY_MARK_SCHEMA_VERSION } from './relay-mark.js';

// relayed.json in the agent's folder (relay-mark.ts): the rule checkRelayMark mirrors (held to it
// by test/core/relay-mark-check.test.ts) and the type both sides use; no daemon loads it.
export const relayMarkSchema = z.strictObject({
  schemaVersion: z.literal(RELAY_MARK_SCHEMA_VERSION),
  // The helper key the agent took the receipts under: a mark for another key says nothing.
  helperKeyId: z.string().regex(/^[0-9a-f]{16}$/),
  // Every receipt with a seq at or below this one is relayed (or dropped by the agent for good).
  relayedSeq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
});
export type RelayMark = z.infer<typeof relayMarkSchema>;
