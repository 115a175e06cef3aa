// How a node proves, when it holds a wake-up wait (`GET /v1/wait`, docs/protocol.md), that it is
// the enrolled node it names: the same `Authorization: Steward-Node <nodeId> <expiresAt ms>
// <base64 Ed25519 signature>` header as a download's (download-auth.ts), signed with its node key
// under its own domain `steward-wait-v1`, so a download credential (which the helper holds) is
// not a wait's, nor the other way round. A wait learns only that its own node's desired set
// changed; a credential seen on the way is good for WAIT_AUTH_TTL_MS at most.
import type { KeyObject } from 'node:crypto';
import { checkNodeClaim, nodeAuthorization, type DownloadClaim } from './download-auth.js';
import { DOMAINS } from './keys.js';

export const WAIT_AUTH_TTL_MS = 10 * 60_000;
// The TTL plus room for a node clock ahead of the control plane's (heartbeats refuse more skew).
export const WAIT_AUTH_MAX_AHEAD_MS = 20 * 60_000;

// The Authorization header of a wait by node `nodeId`, good until `expiresAt`.
export function waitAuthorization(nodeId: string, expiresAt: number, nodeKey: KeyObject): string {
  return nodeAuthorization(DOMAINS.wait, nodeId, expiresAt, nodeKey);
}

// Why a wait's claim does not hold at `now` for a node whose key is `nodeKey`, or null when it does.
export function checkWaitClaim(claim: DownloadClaim, nodeKey: KeyObject, now: number): string | null {
  return checkNodeClaim(claim, nodeKey, now, DOMAINS.wait, WAIT_AUTH_MAX_AHEAD_MS);
}
