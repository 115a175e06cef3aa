import { z } from 'zod';
import { NODE_STATE_SCHEMA_VERSION } from './node-id.js';

// state/node.json as the helper reads it: enrollment may add fields beside nodeId, which are
// kept; only these two are read. node-id.ts checks it without zod (checkNodeState), held to
// this schema by test/helper/receipts/node-state-check.test.ts; this schema words a refusal.
export const nodeStateSchema = z.looseObject({ schemaVersion: z.literal(NODE_STATE_SCHEMA_VERSION), nodeId: z.string().min(1).max(128) });
export type NodeState = z.infer<typeof nodeStateSchema>;
