// The agent's relay mark (issue 15): /var/lib/steward-agent/relayed.json, written by the agent,
// read by the helper. It says up to which receipt seq the agent has handed every receipt it took
// to the control plane and had it acknowledged (or dropped it for good: a helper key change, a
// re-enrollment). The helper keeps every receipt above the mark, so that no load on helper.sock
// can push a receipt out before the agent relayed it. Zod-free: the helper reads it on every
// receipt it signs; relay-mark-schema.ts holds the rule this checker mirrors.
import path from 'node:path';
import { isInt, isObject, onlyKeys } from './json-checks.js';
import type { HostPaths } from './paths.js';
import type { RelayMark } from './relay-mark-schema.js';

export type { RelayMark };
export const RELAY_MARK_SCHEMA_VERSION = 1;

// The mark's file in the agent's folder.
export function relayMarkFile(paths: HostPaths): string {
  return path.join(paths.agentDir, 'relayed.json');
}

// relayed.json as relayMarkSchema returns it, or null when it would refuse it.
export function checkRelayMark(v: unknown): RelayMark | null {
  if (!isObject(v) || !onlyKeys(v, ['schemaVersion', 'helperKeyId', 'relayedSeq'])) return null;
  if (v.schemaVersion !== RELAY_MARK_SCHEMA_VERSION) return null;
  if (typeof v.helperKeyId !== 'string' || !/^[0-9a-f]{16}$/.test(v.helperKeyId)) return null;
  if (!isInt(v.relayedSeq, 0, Number.MAX_SAFE_INTEGER)) return null;
  return { schemaVersion: RELAY_MARK_SCHEMA_VERSION, helperKeyId: v.helperKeyId, relayedSeq: v.relayedSeq };
}
