import type { DesiredEntry } from '../../core/control-api.js';
import { envelopeSchema, type Envelope } from '../../core/release-schemas.js';
import type { ReleaseRow, StoreReader } from '../store/store.js';
import { indexedManifestOf } from './indexed-manifest.js';

// What a heartbeat answer asks of a node at `now`: every attempt a run that has not ended issued
// to it that no counting receipt answered yet and whose window has not closed, with the release's
// signed manifest and, for a run with windows, the window's end (`notAfter`), and the run's bake as
// the watch window after activation (`watchMs`, docs/design.md §17; sent only to an agent that reads
// it: control-server.ts withAcceptedVersions), the signed downgrade authorization for that app
// and version when an operator made one (docs/design.md §18; sent only to an agent that reads it),
// and until when a failed download is tried again (`fetchUntil`, docs/design.md §18: half the
// run's verdict timeout after the issue, which leaves the other half to install, start, probe and
// relay the verdict, or the final FETCH_FAILED, before the run times the node out; sent only to an
// agent that reads it, DESIRED_FIELDS_HEADER), and the release's manifest signed with its file index
// when the catalog keeps one that names the same bytes (`indexedManifest`, docs/design.md §20.2;
// sent only to an agent that reads it; never with a revert, which stages nothing).
export async function desiredFor(tx: StoreReader, nodeId: string, now: number): Promise<DesiredEntry[]> {
  const out: DesiredEntry[] = [];
  // Why first: with no run going there is nothing to send, and this is cheaper than the join.
  if (!(await tx.runs.anyActive())) return out;
  for (const a of await tx.runs.openAttemptsFor(nodeId, now)) {
    const release = await tx.releases.get(a.app, a.version);
    // A release removed from the catalog has no manifest to send; the run times out on it.
    if (!release) continue;
    const downgrade = await downgradeFor(tx, a.app, a.version);
    // A target's revert run asks for the helper's rollback, not an update (docs/design.md §18).
    const attempt = await tx.runs.attempt(a.attemptId);
    const rollback = attempt !== null && (await tx.targets.ownerOf(attempt.runId))?.kind === 'revert';
    out.push({ app: a.app, version: a.version, attemptId: a.attemptId, manifest: release.manifest, ...(a.notAfter !== null ? { notAfter: a.notAfter } : {}), watchMs: Math.min(Math.max(0, Math.trunc(Number(a.bakeMs) || 0)), 86_400_000), ...(downgrade && !rollback ? { downgrade } : {}), ...(rollback ? { rollback: true as const } : {}), ...fetchUntilOf(a), ...(rollback ? {} : indexedOf(release)) });
  }
  return out;
}

// The stored downgrade authorization of app@version as the envelope it is, or null. Whatever the
// database holds is sent only when it has an envelope's shape (an agent refuses a whole answer
// that breaks the contract); whether it authorizes anything is the host's check, against its
// own trusted keys, never the control plane's word.
async function downgradeFor(tx: StoreReader, app: string, version: string): Promise<Envelope | null> {
  const row = await tx.releases.downgrade(app, version);
  if (!row) return null;
  const ok = envelopeSchema.safeParse(row.authorization);
  return ok.success ? ok.data : null;
}

// The release's indexed manifest as a desired-entry field, when it is one to send.
function indexedOf(release: ReleaseRow): { indexedManifest?: Envelope } {
  const m = indexedManifestOf(release);
  return m ? { indexedManifest: m } : {};
}

// The fetch deadline of an attempt, or nothing when its row holds no usable numbers.
function fetchUntilOf(a: { issuedAt: number; verdictTimeoutMs: number }): { fetchUntil?: number } {
  const at = Number(a.issuedAt) + Math.floor(Number(a.verdictTimeoutMs) / 2);
  return Number.isSafeInteger(at) && at > 0 ? { fetchUntil: at } : {};
}
