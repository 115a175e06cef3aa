import * as z from '../core/zod-mini.js';

export const NODE_STATE_SCHEMA_VERSION = 1;

// state/node.json as the helper reads it: enrollment may add fields beside nodeId, which are
// kept; only these two are read.
export const nodeStateSchema = z.looseObject({ schemaVersion: z.literal(NODE_STATE_SCHEMA_VERSION), nodeId: z.string().check(z.minLength(1), z.maxLength(128)) });
export type NodeState = z.infer<typeof nodeStateSchema>;
