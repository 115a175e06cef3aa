// The agent's half of TUF trust (docs/design.md §21.2): when a heartbeat answer names a root or
// timestamp version newer than the helper trusts, the agent fetches `GET /v1/trust/bundle?root=N`
// (authenticated as /v1/wait: platform/wait-auth.ts) and hands it to the helper, which verifies
// it all. Nothing here is trusted: the agent only carries bytes, capped, within its deadlines.
import { MAX_TRUST_BUNDLE_BYTES, trustBundleSchema, type TrustBundle } from '../core/control-api.js';
import { StewardError } from '../core/errors.js';
import type { TrustReport } from '../core/heartbeat-schema.js';
import { mustParse } from '../core/must-parse.js';
import type { TrustStatus } from '../protocol/answers.js';
import type { ControlPlaneClient } from './control-plane-client.js';
import { DEFAULT_TIMEOUT_MS } from './control-plane-client.js';

export const TRUST_BUNDLE_PATH = '/v1/trust/bundle';
// The answer's body is read up to MAX_TRUST_BUNDLE_BYTES (control-api.ts: an agent reads no more).
export const MAX_TRUST_BUNDLE_ANSWER_BYTES = MAX_TRUST_BUNDLE_BYTES;

export interface TrustBundleSource {
  get: ControlPlaneClient['get'];
  // The node's wait credential (platform/wait-auth.ts), made afresh for each request.
  authorization: () => string;
  timeoutMs?: number;
}

// Fetches the bundle for a host that trusts root `root`. Throws CONTROL_PLANE_UNREACHABLE (no
// answer, over the cap, past the deadline) or CONTROL_PLANE_REFUSED (an answer other than 200),
// TRUST_INVALID for a 200 that is no bundle.
export async function fetchTrustBundle(src: TrustBundleSource, root: number, signal?: AbortSignal): Promise<TrustBundle> {
  const answer = await src.get(
    () => ({ endpoint: `${TRUST_BUNDLE_PATH}?root=${root}`, headers: { Authorization: src.authorization() }, timeoutMs: src.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxBytes: MAX_TRUST_BUNDLE_ANSWER_BYTES }),
    signal,
  );
  if (answer.status !== 200) throw new StewardError('CONTROL_PLANE_REFUSED', `GET ${TRUST_BUNDLE_PATH}?root=${root} answered ${answer.status}`);
  return mustParse(trustBundleSchema, answer.json, 'TRUST_INVALID', `the answer of GET ${TRUST_BUNDLE_PATH}`);
}

// Whether the control plane's versions are newer than what the helper trusts (only a `tuf` helper
// that read its store is refreshed: a `keys` host has no root to verify anything from).
export function needsRefresh(helper: TrustStatus | undefined, offered: { rootVersion: number; timestampVersion: number } | undefined): boolean {
  if (!helper || !offered || helper.scheme !== 'tuf' || helper.rootVersion === undefined || helper.error !== undefined) return false;
  return offered.rootVersion > helper.rootVersion || offered.timestampVersion > (helper.timestampVersion ?? 0);
}

// The heartbeat's `trust` (payload v8) from the helper's status: the age of the newest valid
// timestamp (now - its x-steward-signed-at), none when it has expired or there is none.
export function trustReportOf(s: TrustStatus, now: number): TrustReport {
  const valid = s.timestampSignedAt !== undefined && s.timestampExpired !== true;
  return {
    scheme: s.scheme,
    ...(s.rootVersion !== undefined ? { rootVersion: s.rootVersion } : {}),
    ...(s.timestampVersion !== undefined ? { timestampVersion: s.timestampVersion } : {}),
    ...(valid ? { timestampAgeSeconds: Math.max(0, Math.floor((now - (s.timestampSignedAt as number)) / 1000)) } : {}),
  };
}
