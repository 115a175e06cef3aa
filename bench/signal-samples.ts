// docs/design.md §19's storage of signal samples (issue 34): what keeping each node's app signals
// costs the control plane. N nodes (10,000; quick 300) of one app heartbeat every 30 s for M
// simulated minutes (150: past the 2 h retention, so the table reaches its plateau), in batches
// of 500 heartbeats per write transaction as the heartbeat group commit makes them, on a SQLite
// store. For each heartbeat: the time of recording its signals (record-signals.ts: at most one
// sample per node, app and minute, and a prune once a minute), against the time of recording the
// heartbeat itself (its nodes row) in the same transaction, which every heartbeat already pays.
//   34 samples: µs per heartbeat, signals against the heartbeat's own record, and the rows kept.
//
//   node dist/bench/signal-samples.js [--quick] [--json] [--runs N] [--nodes N] [--minutes M]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recordSignals, SIGNAL_RETENTION_MS } from '../src/control/analysis/record-signals.js';
import { openSqliteStore } from '../src/control/store/sqlite/open-sqlite-store.js';
import type { HeartbeatApp, HeartbeatPayload } from '../src/core/heartbeat-schema.js';
import { benchArgs, median, note, printRow, ratios, series } from './lib.js';

const args = benchArgs(1, 1, ['--nodes', '--minutes']);
const NODES = Number(args.rest.nodes ?? (args.quick ? 300 : 10_000));
const MINUTES = Number(args.rest.minutes ?? (args.quick ? 150 : 150));
const BATCH = 500;
const HB_MS = 30_000;
for (const [name, v] of [['--nodes', NODES], ['--minutes', MINUTES]] as const) {
  if (!(Number.isInteger(v) && v > 0)) throw new Error(`${name} takes a positive integer, not ${v}`);
}

const T0 = 1_800_000_000_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-signals-'));
try {
  const file = path.join(dir, 'control.db');
  let now = T0;
  const store = openSqliteStore(file, { create: true, clock: { now: () => now } });
  const ids = Array.from({ length: NODES }, (_, i) => `n-${i.toString(16).padStart(8, '0')}`);
  await store.write(async (tx) => {
    for (const nodeId of ids) await tx.nodes.insert({ nodeId, hostname: nodeId, nodePublicKey: 'k', helperPublicKey: 'k', enrolledAt: T0, labels: {} });
  });
  const since = new Date(T0 - 3_600_000).toISOString();
  const app = (i: number, round: number): HeartbeatApp =>
    ({
      name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: T0 },
      signals: { since, restarts: Math.floor(round / 50), livenessFailures: 0, watchdogKills: 0, oomKills: 0, cpuSeconds: Math.floor(round * 0.3), rssBytes: 80e6 + i, requests: round * 1500 + i, errors: round + (i % 7), scrape: { ok: true, at: since } },
    }) as HeartbeatApp;

  const rounds = (MINUTES * 60_000) / HB_MS;
  const signalUs: number[] = [];
  const heartbeatUs: number[] = [];
  let seq = 0;
  for (let round = 0; round < rounds; round++) {
    seq++;
    let sig = 0;
    let hbt = 0;
    for (let b = 0; b < NODES; b += BATCH) {
      // Each node heartbeats at its own offset within the 30 s interval.
      now = T0 + round * HB_MS + Math.floor((b / NODES) * HB_MS);
      await store.write(async (tx) => {
        const at = await tx.now();
        for (let i = b; i < Math.min(NODES, b + BATCH); i++) {
          const hb = { v: 6, nodeId: ids[i]!, seq, sentAt: at, bootId: 'boot', agentVersion: '1.0.0', apps: [app(i, round)], receipts: [] } as unknown as HeartbeatPayload;
          const t0 = process.hrtime.bigint();
          await tx.nodes.recordHeartbeat(hb, at);
          const t1 = process.hrtime.bigint();
          await recordSignals(tx, store, hb, at);
          const t2 = process.hrtime.bigint();
          hbt += Number(t1 - t0);
          sig += Number(t2 - t1);
        }
      });
    }
    signalUs.push(sig / NODES / 1000);
    heartbeatUs.push(hbt / NODES / 1000);
  }
  const rows = (store.db.prepare('SELECT COUNT(*) AS n FROM signal_samples').get() as { n: number }).n;
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  const bytes = statSync(file).size;
  await store.close();
  // Per minute (two rounds: one writes the minute's samples, the next skips them), over the
  // plateau: the second half, once the retention's prune runs steadily.
  const steady = (xs: number[]) => {
    const perMinute = Array.from({ length: Math.floor(xs.length / 2) }, (_, k) => (xs[2 * k]! + xs[2 * k + 1]!) / 2);
    return perMinute.slice(Math.floor(perMinute.length / 2));
  };
  const keptMax = NODES * (SIGNAL_RETENTION_MS / 60_000 + 2);
  printRow(args, {
    row: '34 samples',
    what: `recording a heartbeat's signals (one sample per node, app and minute; prune past ${SIGNAL_RETENTION_MS / 3_600_000} h), ${NODES} nodes every 30 s for ${MINUTES} min, SQLite`,
    unit: 'µs per heartbeat',
    steward: series(steady(signalUs)),
    peer: series(steady(heartbeatUs)),
    peerWhat: "recording the heartbeat itself (its nodes row), in the same transaction",
    ratio: series(ratios(steady(signalUs), steady(heartbeatUs))),
    target: `rows kept at most nodes × ${SIGNAL_RETENTION_MS / 60_000 + 2}`,
    met: rows <= keptMax,
    extra: {
      'rows kept': rows,
      'rows kept per node': rows / NODES,
      'rows written per heartbeat': 0.5,
      'database MB': Number((bytes / 1e6).toFixed(1)),
      'bytes per row (file / rows)': Math.round(bytes / Math.max(1, rows)),
      'signal µs per heartbeat (median, all rounds)': median(signalUs),
    },
    notes: 'the first sample of each minute is written and the second heartbeat of the minute skips the database; a row per heartbeat would write twice as many and keep them without end',
  });
  note(args, `rows ${rows}, file ${(bytes / 1e6).toFixed(1)} MB`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
