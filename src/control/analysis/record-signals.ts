// The heartbeat's side of the analysis (docs/design.md §19): each app's signals become at most one
// stored sample per node, app and minute, and samples older than SIGNAL_RETENTION_MS are forgotten,
// so that 10,000 nodes heartbeating every 30 s write 10,000 rows a minute per app, not 20,000, and
// keep at most two hours of them (bench/signal-samples.ts measures both).
import type { HeartbeatPayload } from '../../core/heartbeat-schema.js';
import type { ControlStore, SignalSample, StoreTx } from '../store/store.js';
import { MAX_ANALYSIS_WINDOW_MS } from './policy.js';
import { parseAppSignals } from './signals-shape.js';

export const SAMPLE_MS = 60_000;
// Twice the longest window: a step judged a window late still finds all of its samples.
export const SIGNAL_RETENTION_MS = 2 * MAX_ANALYSIS_WINDOW_MS;
// How often one instance forgets old samples.
export const PRUNE_EVERY_MS = 60_000;
// Past this many remembered (node, app) pairs the memory of minutes written starts again.
const REMEMBERED = 500_000;

// What this process knows it wrote: the minute of each node and app's last sample, and when it
// last pruned. Only a shortcut: the table's key keeps one sample a minute whatever it says (another
// instance wrote it; a transaction rolled back and lost a minute's sample, which the next minute has).
interface Memory {
  written: Map<string, number>;
  prunedAt: number;
}
const memories = new WeakMap<object, Memory>();

function memoryOf(store: object): Memory {
  let m = memories.get(store);
  if (!m) memories.set(store, (m = { written: new Map(), prunedAt: 0 }));
  return m;
}

// The samples a heartbeat brings that its node has none of yet this minute.
export function samplesOf(hb: Pick<HeartbeatPayload, 'nodeId' | 'apps'>, at: number, written?: ReadonlyMap<string, number>): SignalSample[] {
  const minute = at - (at % SAMPLE_MS);
  const out: SignalSample[] = [];
  for (const app of hb.apps) {
    if (written?.get(`${hb.nodeId}\0${app.name}`) === minute) continue;
    const s = parseAppSignals(app);
    if (!s) continue;
    out.push({ nodeId: hb.nodeId, app: app.name, minute, at, version: app.current, ...s });
  }
  return out;
}

// Stores the heartbeat's samples (in its transaction, at the store's time `at`) and, at most once
// a PRUNE_EVERY_MS per process, forgets those past the retention.
export async function recordSignals(tx: StoreTx, store: ControlStore, hb: Pick<HeartbeatPayload, 'nodeId' | 'apps'>, at: number): Promise<void> {
  const mem = memoryOf(store);
  const samples = samplesOf(hb, at, mem.written);
  if (samples.length > 0) {
    await tx.signals.record(samples);
    if (mem.written.size > REMEMBERED) mem.written.clear();
    for (const s of samples) mem.written.set(`${s.nodeId}\0${s.app}`, s.minute);
  }
  if (at - mem.prunedAt >= PRUNE_EVERY_MS) {
    mem.prunedAt = at;
    await tx.signals.prune(at - SIGNAL_RETENTION_MS);
  }
}
