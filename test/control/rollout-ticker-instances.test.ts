// docs/design.md §13: rollouts advance on a ticker under a per-run lock, on every instance. Two serve
// instances on one PostgreSQL database, the simulated agents heartbeating to either, finish a
// run with a canary and batches, each attempt issued once. An operator's stop or pause waits
// for the lock a tick holds (the tick's instance stopped at a test-only stop point,
// server/test-stop-points.ts), and the run does not advance past it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pauseRun, startRun, stopRun } from '../../src/control/rollouts/start-run.js';
import { startControlServer } from '../../src/control/server/control-server.js';
import { openStore } from '../../src/control/store/open-store.js';
import { RUN_LOCK_CLASS } from '../../src/control/store/postgres/runs.js';
import { systemClock } from '../../src/platform/clock.js';
import { startControlDaemon, waitUntil } from '../helpers/fleet.js';
import { pgQuery } from '../helpers/postgres.js';
import { assertRunEndedWhole, enrollSimFleet, stoppedAt } from '../helpers/sim-agents.js';
import { describePostgres } from '../helpers/store-backends.js';

describePostgres((backend) => {
  test('two instances, the nodes heartbeating to either, finish a run with a canary and batches, each attempt issued once', async () => {
    const db = await backend.createDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-ticker-two-'));
    const store = await openStore(db);
    const args = ['--artifacts', path.join(dir, 'artifacts')];
    const [a, b] = await Promise.all([startControlDaemon(db, 0, 1, { args }), startControlDaemon(db, 0, 1, { args })]);
    const fleet = await enrollSimFleet(store, a.url, 7, dir);
    try {
      fleet.urls.push(b.url);
      // Each round, every node calls the instance at the head of the list, which alternates.
      const swap = setInterval(() => fleet.urls.push(fleet.urls.shift()!), 150);
      fleet.start(100);
      try {
        await fleet.seen(30_000);
        const run = await startRun(store, 'web', '1.1.0', { canary: [fleet.nodes[0]!.fake.nodeId], batch: '2', bakeMs: 0 });
        await waitUntil('the run to end', 60_000, async () => ((await store.read((tx) => tx.runs.get(run.id)))!.status !== 'running' ? true : undefined));
        await fleet.drained(30_000);
        await fleet.stop();
        await assertRunEndedWhole(store, fleet, run.id);
      } finally {
        clearInterval(swap);
      }
    } finally {
      await fleet.stop().catch(() => undefined);
      await a.stop();
      await b.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const command of ['stop', 'pause'] as const) {
    test(`rollout ${command} while a tick holds the run's lock waits for it, and the run does not advance afterwards`, async () => {
      const db = await backend.createDatabase();
      const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-ticker-wait-'));
      const store = await openStore(db);
      const args = ['--artifacts', path.join(dir, 'artifacts')];
      const a = await startControlDaemon(db, 0, 1, { args, env: { STEWARD_CONTROL_TEST_HOOKS: '1', STEWARD_CONTROL_TEST_STOP_AT: 'issue-before' } });
      const fleet = await enrollSimFleet(store, a.url, 3, dir);
      try {
        fleet.start(200);
        await fleet.seen(30_000);
        const run = await startRun(store, 'web', '1.1.0', { canary: [fleet.nodes[0]!.fake.nodeId], batch: '2', bakeMs: 0 });
        // A holds the run's lock, about to issue the first batch after the canary's verdict.
        await stoppedAt(a, 'issue-before');
        await fleet.stop();
        let done = false;
        const change = (command === 'stop' ? stopRun(store, 'web') : pauseRun(store, 'web', true)).then(() => void (done = true));
        await waitUntil(`rollout ${command} to wait for the run's lock`, 30_000, async () => {
          const waiting = await pgQuery(db, `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = $2`, [RUN_LOCK_CLASS, run.id]);
          return waiting.rowCount ? true : undefined;
        });
        assert.equal(done, false, `rollout ${command} is still waiting while the tick holds the lock`);
        await a.kill();
        await change;
        // Another instance's tick (this process's, on the same database) after the change.
        const other = await startControlServer({ store, artifactsDir: path.join(dir, 'artifacts'), host: '127.0.0.1', port: 0, heartbeatSeconds: 1, clock: systemClock, tickMs: 0 });
        try {
          await other.tick();
        } finally {
          await other.close();
        }
        const after = await store.read(async (tx) => ({ run: (await tx.runs.get(run.id))!, issued: await tx.runs.issued(run.id) }));
        assert.deepEqual(after.issued.map((i) => i.nodeId), [fleet.nodes[0]!.fake.nodeId], 'the canary only: the batch the killed tick was about to issue never was');
        if (command === 'stop') assert.equal(after.run.status, 'stopped');
        else assert.deepEqual([after.run.status, after.run.paused], ['running', true]);
      } finally {
        await fleet.stop().catch(() => undefined);
        await a.kill();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
