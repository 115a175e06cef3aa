// What one node's samples say over a window (docs/design.md §19, "Judgement"): the increase of each
// counter, with resets counted as Prometheus' rate() counts them, and how long the samples span.

// One sample of a node's app, as the store keeps it (store.ts SignalSample, less its keys).
export interface CounterSample {
  at: number;
  version: string | null;
  since: number;
  restarts: number;
  livenessFailures: number;
  requests: number | null;
  errors: number | null;
}

export interface NodeIncrease {
  // The time between the first and last sample counted (ms): the node's exposure.
  spanMs: number;
  restarts: number;
  livenessFailures: number;
  // Null when no two samples in a row carried both request counters (absent: no data, never zero).
  requests: number | null;
  errors: number | null;
  // Resets seen (a new `since`, or a counter going down).
  resets: number;
}

// The increase of one counter from `a` to `b`: the difference, or, after a reset, all of `b`
// (the counter began again from zero in between; what it counted before the reset since `a` is lost,
// as in rate()).
function step(a: number, b: number, reset: boolean): { inc: number; reset: boolean } {
  if (reset || b < a) return { inc: b, reset: true };
  return { inc: b - a, reset: false };
}

// The increase over `samples` (one node's, in time order) of those taken at `version` (any when
// undefined); a pair of samples counts only when both are at that version, so a node's own switch
// of versions is never read as a change of its counters. Null when fewer than two samples count.
export function nodeIncrease(samples: readonly CounterSample[], version?: string | null): NodeIncrease | null {
  const ok = (s: CounterSample) => version === undefined || s.version === version;
  let spanMs = 0;
  let pairs = 0;
  let restarts = 0;
  let livenessFailures = 0;
  let requests: number | null = null;
  let errors: number | null = null;
  let resets = 0;
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    if (!ok(a) || !ok(b) || b.at <= a.at) continue;
    pairs++;
    spanMs += b.at - a.at;
    const newSince = b.since !== a.since;
    const r = step(a.restarts, b.restarts, newSince);
    const l = step(a.livenessFailures, b.livenessFailures, newSince);
    restarts += r.inc;
    livenessFailures += l.inc;
    let reset = r.reset || l.reset;
    if (a.requests !== null && b.requests !== null && a.errors !== null && b.errors !== null) {
      const q = step(a.requests, b.requests, newSince);
      // Why the requests' reset for the errors too: both are the app's own counters and begin
      // again together when its process does; an error counter that did not fall would count twice.
      const e = step(a.errors, b.errors, newSince || q.reset);
      requests = (requests ?? 0) + q.inc;
      errors = (errors ?? 0) + e.inc;
      reset ||= q.reset || e.reset;
    }
    if (reset) resets++;
  }
  return pairs === 0 ? null : { spanMs, restarts, livenessFailures, requests, errors, resets };
}
