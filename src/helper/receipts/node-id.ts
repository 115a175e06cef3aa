import { zodChecker } from '../../core/checker.js';
import { z } from 'zod';
import type { HostPaths } from '../../core/paths.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

const NODE_STATE_SCHEMA_VERSION = 1;
// Enrollment may add fields beside nodeId; only these two are read here.
const nodeStateSchema = z.looseObject({ schemaVersion: z.literal(NODE_STATE_SCHEMA_VERSION), nodeId: z.string().min(1).max(128) });

// The nodeId from state/node.json, or null before enrollment. A file that does not
// parse or comes from a newer steward is refused (STATE_INVALID), never guessed at.
export async function readNodeId(paths: HostPaths): Promise<string | null> {
  const state = await readVersionedJson(paths.nodeState, NODE_STATE_SCHEMA_VERSION, zodChecker(nodeStateSchema), 64 * 1024);
  return state?.nodeId ?? null;
}
