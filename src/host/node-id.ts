import type { HostPaths } from '../core/paths.js';
import { readVersionedJson } from '../platform/versioned-file.js';
import { NODE_STATE_SCHEMA_VERSION, nodeStateSchema } from './node-state-schema.js';

// The nodeId from state/node.json, or null before enrollment. A file that does not
// parse or comes from a newer steward is refused (STATE_INVALID), never guessed at.
export async function readNodeId(paths: HostPaths): Promise<string | null> {
  const state = await readVersionedJson(paths.nodeState, NODE_STATE_SCHEMA_VERSION, nodeStateSchema, 64 * 1024);
  return state?.nodeId ?? null;
}
