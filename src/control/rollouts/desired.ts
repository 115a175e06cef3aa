import type { DesiredEntry } from '../../core/control-api.js';
import type { ControlStore } from '../store/open-store.js';
import { manifestOf, readRelease } from '../store/releases.js';
import { openAttemptsFor } from '../store/runs.js';

// What a heartbeat answer asks of a node: every attempt a still-running run issued to it that no
// counting receipt answered yet, with the release's signed manifest.
export function desiredFor(store: ControlStore, nodeId: string): DesiredEntry[] {
  const out: DesiredEntry[] = [];
  for (const a of openAttemptsFor(store, nodeId)) {
    const release = readRelease(store, a.app, a.version);
    // A release removed from the catalog has no manifest to send; the run times out on it.
    if (release) out.push({ app: a.app, version: a.version, attemptId: a.attemptId, manifest: manifestOf(release) });
  }
  return out;
}
