// The nodes behind an app's last succeeded run (docs/design.md §11): enrolled nodes its selector
// matches now that report the app at an older version, or at none (skipped then, enrolled
// later, re-enrolled, or rolled back since). `rollout retry --behind` targets them. A node that
// reports a newer version is ahead, not behind: it is shown apart and never asked to go back.
import { matchesSelector, parseSelector } from '../../core/selector.js';
import { compareVersions, isVersion } from '../../core/version.js';
import type { NodeRow, RunRow, StoreReader } from '../store/store.js';

export interface BehindNode {
  nodeId: string;
  hostname: string;
  current: string | null;
}

// The nodes off `run`'s version (a succeeded run), by nodeId: behind it, and ahead of it.
// `nodes`: the enrolled nodes, when the caller has read them already.
export async function nodesOffVersion(tx: StoreReader, run: RunRow, nodes?: readonly NodeRow[]): Promise<{ behind: BehindNode[]; ahead: BehindNode[] }> {
  const sel = parseSelector(run.selector);
  const behind: BehindNode[] = [];
  const ahead: BehindNode[] = [];
  for (const n of nodes ?? (await tx.nodes.list())) {
    const app = n.apps.find((a) => a.name === run.app);
    if (!app || app.current === run.version || !matchesSelector(sel, n.labels)) continue;
    const off = { nodeId: n.nodeId, hostname: n.hostname, current: app.current };
    (isNewer(app.current, run.version) ? ahead : behind).push(off);
  }
  return { behind, ahead };
}

// The nodes behind `run` (a succeeded run), by nodeId.
export async function behindNodes(tx: StoreReader, run: RunRow): Promise<BehindNode[]> {
  return (await nodesOffVersion(tx, run)).behind;
}

// Whether `current` is a newer version than `target` (semver precedence; a report that is not a
// version is not newer).
function isNewer(current: string | null, target: string): boolean {
  return current !== null && isVersion(current) && isVersion(target) && compareVersions(current, target) > 0;
}
