// How a node proves, when its helper downloads a release tarball from steward-control, that it is
// an enrolled node (issue 31 item 11: anonymous slow readers took every download slot). The agent
// signs `<nodeId>\n<expiresAt>` with its node key (the key its heartbeats are signed with) under
// the domain `steward-download-v1`, and hands the helper the Authorization header with the
// update request, for the control plane's origin only:
//
//   Authorization: Steward-Node <nodeId> <expiresAt ms> <base64 Ed25519 signature>
//
// The control plane checks it against the node's key in its store (control/server/download-access.ts).
// A header is good for DOWNLOAD_AUTH_TTL_MS, long enough for a fetch with its busy waits (the
// helper's default deadline is 10 min); the control plane takes none that ends more than
// DOWNLOAD_AUTH_MAX_AHEAD_MS ahead of its own clock, so one seen on the way is not good for long.
import type { KeyObject } from 'node:crypto';
import { DOMAINS, keyIdOf, signPayloadBytes, strictBase64, verifyEnvelopeBytes, type Domain } from './keys.js';

export const DOWNLOAD_AUTH_SCHEME = 'Steward-Node';
export const DOWNLOAD_AUTH_TTL_MS = 60 * 60_000;
// The TTL plus room for a node clock ahead of the control plane's (heartbeats refuse more skew).
export const DOWNLOAD_AUTH_MAX_AHEAD_MS = 2 * 60 * 60_000;

// What the helper sends with the fetches of one update: `authorization` on every request whose
// URL has the origin `origin` (scheme://host:port), and on no other (a redirect elsewhere, a
// manifest URL on another server).
export interface FetchAuth {
  origin: string;
  authorization: string;
}

function signedText(nodeId: string, expiresAt: number): Buffer {
  return Buffer.from(`${nodeId}\n${expiresAt}`, 'utf8');
}

// The Authorization header value of node `nodeId` good until `expiresAt`.
export function downloadAuthorization(nodeId: string, expiresAt: number, nodeKey: KeyObject): string {
  return `${DOWNLOAD_AUTH_SCHEME} ${nodeId} ${expiresAt} ${signPayloadBytes(DOMAINS.download, signedText(nodeId, expiresAt), nodeKey)}`;
}

export interface DownloadClaim {
  nodeId: string;
  expiresAt: number;
  sig: string;
}

// The parts of a Steward-Node header, or null when it is not one (another scheme, malformed).
export function parseDownloadAuthorization(header: string): DownloadClaim | null {
  const m = /^Steward-Node (n-[0-9a-f]{1,64}) (\d{1,16}) ([A-Za-z0-9+/]{1,200}={0,2})$/.exec(header);
  if (!m) return null;
  return { nodeId: m[1] as string, expiresAt: Number(m[2]), sig: m[3] as string };
}

// Why a claim is not good at `now` for a node whose key is `nodeKey`, or null when it is.
export function checkDownloadClaim(claim: DownloadClaim, nodeKey: KeyObject, now: number): string | null {
  return checkNodeClaim(claim, nodeKey, now, DOMAINS.download, DOWNLOAD_AUTH_MAX_AHEAD_MS);
}

// Why a Steward-Node claim is not good at `now` under `domain` (a credential signed for another
// use is not this one's), when it ends more than `maxAheadMs` ahead, or null when it is.
export function checkNodeClaim(claim: DownloadClaim, nodeKey: KeyObject, now: number, domain: Domain, maxAheadMs: number): string | null {
  if (claim.expiresAt <= now) return 'it has expired';
  if (claim.expiresAt > now + maxAheadMs) return 'it ends too far ahead';
  const bytes = signedText(claim.nodeId, claim.expiresAt);
  if (strictBase64(claim.sig) === null) return 'its signature is not base64';
  const keyId = keyIdOf(nodeKey);
  const checked = verifyEnvelopeBytes({ payload: bytes.toString('base64'), sig: claim.sig, keyId }, bytes, domain, new Map([[keyId, nodeKey]]));
  return checked.ok ? null : 'its signature is not the node key\'s';
}

// The Authorization header value of node `nodeId` good until `expiresAt`, signed under `domain`.
export function nodeAuthorization(domain: Domain, nodeId: string, expiresAt: number, nodeKey: KeyObject): string {
  return `${DOWNLOAD_AUTH_SCHEME} ${nodeId} ${expiresAt} ${signPayloadBytes(domain, signedText(nodeId, expiresAt), nodeKey)}`;
}
