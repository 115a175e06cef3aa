// docs/design.md §13 and §18: killing an instance at any moment loses nothing and issues nothing
// twice. Where rollout-instance-killed.test.ts stops an instance at each named point, this one
// kills at moments nobody chose: two instances on one PostgreSQL database advance a rollout of a
// simulated fleet that heartbeats to either, and a seeded loop SIGKILLs one of them after a
// random pause of 20-400 ms, starts it again on its port and goes on, for a bounded time, so the
// kills land inside ticks, heartbeat group commits and answers alike. Then both are left up: the
// run must end as it would have without a kill, every node sent one attemptId, every receipt
// stored. STEWARD_TEST_SEED replays a seed; the seed of each run is printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { openStore } from '../../src/control/store/open-store.js';
import { startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { mulberry32 } from '../helpers/prng.js';
import { assertRunEndedWhole, enrollSimFleet, type SimFleet } from '../helpers/sim-agents.js';
import { describePostgres } from '../helpers/store-backends.js';

// How long the loop kills for; the run then has both instances to end on.
const KILLING_MS = 12_000;
const NODES = 9;

describePostgres((backend) => {
  test('two instances SIGKILLed at random moments of a rollout lose nothing and issue nothing twice', { timeout: 180_000 }, async () => {
    const seed = Number(process.env.STEWARD_TEST_SEED) || Date.now() % 2 ** 31;
    console.log(`seed ${seed} (STEWARD_TEST_SEED=${seed} replays the kill schedule)`);
    const random = mulberry32(seed);
    const db = await backend.createDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-ticker-random-kill-'));
    const store = await openStore(db);
    const args = ['--artifacts', path.join(dir, 'artifacts')];
    const instances: Array<Daemon & { url: string }> = [await startControlDaemon(db, 0, 1, { args }), await startControlDaemon(db, 0, 1, { args })];
    const ports = instances.map((d) => Number(new URL(d.url).port));
    let fleet: SimFleet | null = null;
    const kills: string[] = [];
    try {
      fleet = await enrollSimFleet(store, instances[0]!.url, NODES, dir);
      fleet.urls.push(instances[1]!.url);
      fleet.start(100);
      await fleet.seen(30_000);
      const run = await startRun(store, 'web', '1.1.0', { canary: [fleet.nodes[0]!.fake.nodeId], batch: '2', bakeMs: 0 });
      const until = Date.now() + KILLING_MS;
      const ended = async () => (await store.read((tx) => tx.runs.get(run.id)))!.status !== 'running';
      while (Date.now() < until && !(await ended())) {
        await new Promise((r) => setTimeout(r, 20 + Math.floor(random() * 380)));
        const i = random() < 0.5 ? 0 : 1;
        await instances[i]!.kill();
        kills.push(`${i === 0 ? 'A' : 'B'}@${KILLING_MS - (until - Date.now())}ms`);
        // Back on its own port, so the agents' list stays the same as a real fleet's would.
        instances[i] = await startControlDaemon(db, ports[i]!, 1, { args });
      }
      console.log(`${kills.length} kills: ${kills.join(' ')}`);
      assert.ok(kills.length >= 3, `the loop killed ${kills.length} times: the run ended before the kills could matter`);
      await waitUntil('the run to end', 90_000, async () => ((await ended()) ? true : undefined));
      await fleet.drained(30_000);
      await fleet.stop();
      await assertRunEndedWhole(store, fleet, run.id);
    } catch (err) {
      throw new Error(`seed ${seed}, kills ${kills.join(' ')}: ${(err as Error).message}`, { cause: err });
    } finally {
      await fleet?.stop().catch(() => undefined);
      for (const d of instances) await d.kill();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
