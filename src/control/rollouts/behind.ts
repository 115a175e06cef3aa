// The nodes behind an app's last succeeded run (DESIGN §11): enrolled nodes its selector matches
// now, that report the app at another version (skipped then, enrolled later, re-enrolled, or
// moved since). `rollout retry --behind` targets them.
import { matchesSelector, parseSelector } from '../../core/selector.js';
import type { RunRow, StoreReader } from '../store/store.js';

export interface BehindNode {
  nodeId: string;
  current: string | null;
}

// The nodes behind `run` (a succeeded run), by nodeId.
export async function behindNodes(tx: StoreReader, run: RunRow): Promise<BehindNode[]> {
  const sel = parseSelector(run.selector);
  const out: BehindNode[] = [];
  for (const n of await tx.nodes.list()) {
    const app = n.apps.find((a) => a.name === run.app);
    if (app && app.current !== run.version && matchesSelector(sel, n.labels)) out.push({ nodeId: n.nodeId, current: app.current });
  }
  return out;
}
