import type { DesiredEntry } from '../../core/control-api.js';
import type { StoreReader } from '../store/store.js';

// What a heartbeat answer asks of a node at `now`: every attempt a run that has not ended issued
// to it that no counting receipt answered yet and whose window has not closed, with the release's
// signed manifest and, for a run with windows, the window's end (`notAfter`), and the run's bake as
// the watch window after activation (`watchMs`, docs/design.md §17; sent only to an agent that reads
// it: control-server.ts withAcceptedVersions).
export async function desiredFor(tx: StoreReader, nodeId: string, now: number): Promise<DesiredEntry[]> {
  const out: DesiredEntry[] = [];
  // Why first: with no run going there is nothing to send, and this is cheaper than the join.
  if (!(await tx.runs.anyActive())) return out;
  for (const a of await tx.runs.openAttemptsFor(nodeId, now)) {
    const release = await tx.releases.get(a.app, a.version);
    // A release removed from the catalog has no manifest to send; the run times out on it.
    if (!release) continue;
    // A target's revert run asks for the helper's rollback, not an update (docs/design.md §18).
    const attempt = await tx.runs.attempt(a.attemptId);
    const rollback = attempt !== null && (await tx.targets.ownerOf(attempt.runId))?.kind === 'revert';
    out.push({ app: a.app, version: a.version, attemptId: a.attemptId, manifest: release.manifest, ...(a.notAfter !== null ? { notAfter: a.notAfter } : {}), watchMs: Math.min(Math.max(0, Math.trunc(Number(a.bakeMs) || 0)), 86_400_000), ...(rollback ? { rollback: true as const } : {}) });
  }
  return out;
}
