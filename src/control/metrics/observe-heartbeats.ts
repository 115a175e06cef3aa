// The heartbeat path's hooks for this instance's metrics (docs/design.md §12). Types and a wrapper only:
// the server imports this file whether or not metrics are on, and prom-client is loaded only
// by control-metrics.ts, when --metrics-listen asks for it.
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import type { HeartbeatBatcher } from '../heartbeat/group-commit.js';
import type { Answer } from '../server/answer.js';

// What the heartbeat path tells the metrics. Each call is cheap and never throws.
export interface HeartbeatMetrics {
  // One heartbeat answered: "ok" or its answer's error code (label-values.ts bounds it), and the
  // seconds from its whole body read to its answer (null: none, as for a body over the limit).
  heartbeatAnswered(code: string | null, seconds: number | null): void;
  // Receipts a commit stored (a receipt already stored and relayed again is not in them).
  receiptsStored(receipts: readonly ReceiptPayload[]): void;
}

// The error code of an answer, or null for a 200.
function codeOf(a: Answer): string {
  const code = (a.body as { error?: { code?: unknown } } | null)?.error?.code;
  return typeof code === 'string' ? code : 'INTERNAL';
}

// `batcher` with every answer (and failure, which the server answers 500 INTERNAL) told to `metrics`.
export function observeHeartbeats(batcher: HeartbeatBatcher, metrics: HeartbeatMetrics | undefined): HeartbeatBatcher {
  if (!metrics) return batcher;
  return {
    stats: batcher.stats,
    async submit(body) {
      const start = performance.now();
      try {
        const answer = await batcher.submit(body);
        metrics.heartbeatAnswered(answer.status === 200 ? null : codeOf(answer), (performance.now() - start) / 1000);
        return answer;
      } catch (err) {
        metrics.heartbeatAnswered('INTERNAL', (performance.now() - start) / 1000);
        throw err;
      }
    },
  };
}
