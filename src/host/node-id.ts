import type { Checker } from '../core/checker.js';
import { isObject, isString } from '../core/json-checks.js';
import type { HostPaths } from '../core/paths.js';
import { readVersionedJson } from '../platform/versioned-file.js';
import type { NodeState } from './node-state-schema.js';

export const NODE_STATE_SCHEMA_VERSION = 1;

// state/node.json as nodeStateSchema (node-state-schema.ts) returns it, or null when it would
// refuse it, without zod (issue 8, row 5: the helper reads it on every update outcome). Loose, as
// the schema: every other key (own or inherited, as `for...in` lists them) is kept as it is,
// but for "__proto__", which zod 4 drops rather than set the result's prototype with it.
export function checkNodeState(v: unknown): NodeState | null {
  if (!isObject(v) || v.schemaVersion !== NODE_STATE_SCHEMA_VERSION || !isString(v.nodeId, 1, 128)) return null;
  const out: Record<string, unknown> = { schemaVersion: NODE_STATE_SCHEMA_VERSION, nodeId: v.nodeId };
  for (const key in v) {
    if (key === 'schemaVersion' || key === 'nodeId' || key === '__proto__') continue;
    out[key] = v[key];
  }
  return out as NodeState;
}

// A module-level constant: a Checker may be a parse-cache key (versioned-file.ts).
export const nodeStateChecker: Checker<NodeState> = {
  check: checkNodeState,
  schema: async () => (await import('./node-state-schema.js')).nodeStateSchema,
};

// The nodeId from state/node.json, or null before enrollment. A file that does not
// parse or comes from a newer steward is refused (STATE_INVALID), never guessed at.
export async function readNodeId(paths: HostPaths): Promise<string | null> {
  const state = await readVersionedJson(paths.nodeState, NODE_STATE_SCHEMA_VERSION, nodeStateChecker, 64 * 1024);
  return state?.nodeId ?? null;
}
