// docs/design.md §13: killing any instance at any moment loses nothing and issues nothing twice. An
// instance (A) advancing a rollout stops itself at a named point (the test-only stop points,
// server/test-stop-points.ts) and is SIGKILLed there; a second instance (B) on the same
// PostgreSQL database takes over, the simulated agents moving to it as agents do. At each of
// five moments, before, during and after issuing a batch and during a heartbeat's commit,
// every node is sent one attemptId, every receipt made is stored, and the run succeeds with
// every node confirmed, as it would have without the kill.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { STOP_POINTS } from '../../src/control/server/test-stop-points.js';
import { openStore } from '../../src/control/store/open-store.js';
import { startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { assertRunEndedWhole, enrollSimFleet, stoppedAt, type SimFleet } from '../helpers/sim-agents.js';
import { describePostgres } from '../helpers/store-backends.js';

describePostgres((backend) => {
  for (const point of STOP_POINTS) {
    test(`an instance SIGKILLed at ${point} loses nothing and issues nothing twice; the other instance finishes the run`, async () => {
      const db = await backend.createDatabase();
      const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-ticker-kill-'));
      const store = await openStore(db);
      const args = ['--artifacts', path.join(dir, 'artifacts')];
      const a = await startControlDaemon(db, 0, 1, { args, env: { STEWARD_CONTROL_TEST_HOOKS: '1', STEWARD_CONTROL_TEST_STOP_AT: point } });
      let b: (Daemon & { url: string }) | null = null;
      let fleet: SimFleet | null = null;
      try {
        fleet = await enrollSimFleet(store, a.url, 5, dir);
        fleet.start(200);
        await fleet.seen(30_000);
        // The canary is issued by the start itself; A issues the first batch of two after its verdict.
        const run = await startRun(store, 'web', '1.1.0', { canary: [fleet.nodes[0]!.fake.nodeId], batch: '2', bakeMs: 0 });
        await stoppedAt(a, point);
        b = await startControlDaemon(db, 0, 1, { args });
        fleet.urls.splice(0, fleet.urls.length, b.url);
        await a.kill();
        await waitUntil('the run to end', 60_000, async () => ((await store.read((tx) => tx.runs.get(run.id)))!.status !== 'running' ? true : undefined));
        await fleet.drained(30_000);
        await fleet.stop();
        await assertRunEndedWhole(store, fleet, run.id);
      } finally {
        await fleet?.stop().catch(() => undefined);
        await a.kill();
        await b?.stop();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
