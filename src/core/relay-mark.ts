// The agent's relay mark (issue 15): /var/lib/steward-agent/relayed.json, written by the agent,
// read by the helper. It says up to which receipt seq the agent has handed every receipt it took
// to the control plane and had it acknowledged (or dropped it for good: a helper key change, a
// re-enrollment). The helper keeps every receipt above the mark, so that no load on helper.sock
// can push a receipt out before the agent relayed it.
import path from 'node:path';
import * as z from './zod-mini.js';
import { intSchema, keyIdSchema } from './names.js';
import type { HostPaths } from './paths.js';

export const RELAY_MARK_SCHEMA_VERSION = 1;

// relayed.json in the agent's folder.
export const relayMarkSchema = z.strictObject({
  schemaVersion: z.literal(RELAY_MARK_SCHEMA_VERSION),
  // The helper key the agent took the receipts under: a mark for another key says nothing.
  helperKeyId: keyIdSchema,
  // Every receipt with a seq at or below this one is relayed (or dropped by the agent for good).
  relayedSeq: intSchema(0),
});
export type RelayMark = z.infer<typeof relayMarkSchema>;

// The mark's file in the agent's folder.
export function relayMarkFile(paths: HostPaths): string {
  return path.join(paths.agentDir, 'relayed.json');
}
