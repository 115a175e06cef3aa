// docs/design.md §18, "downloads never halt a fleet on one host's word": the signed manifest names the
// instance it was added through (`--base-url A`), yet every instance serves the shared catalog's
// artifacts at the same path, and the signed integrity makes any copy as good as another. Two
// instances on one PostgreSQL database, two real hosts whose agents list both: the canary fetches
// from A; A is SIGKILLed during the bake; B issues the next batch, whose host fetches the artifact
// path from B (A's URL refusing connections) and the run succeeds. Before §18 that host's
// FETCH_FAILED halted the run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { describeRun, type RunStatusView } from '../../src/control/rollouts/run-status.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { appRelease } from '../fixtures/app-releases.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { controlCli, startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { currentOn, makeFleetHost, removeFleetHost, type FleetHost } from '../helpers/fleet-hosts.js';
import { agentctl } from '../helpers/host.js';
import { describePostgres } from '../helpers/store-backends.js';

const view = (store: ControlStore): Promise<RunStatusView> => store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));

describePostgres((backend) => {
  test('the instance that served the artifact is killed mid-run, and the run goes on through the other', { timeout: 240_000 }, async () => {
    const db = await backend.createDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-artifact-killed-'));
    const artifacts = path.join(dir, 'artifacts');
    const args = ['--artifacts', artifacts];
    const a = await startControlDaemon(db, 0, 1, { args });
    let b: (Daemon & { url: string }) | null = null;
    const store = await openStore(db);
    const hosts: FleetHost[] = [];
    try {
      b = await startControlDaemon(db, 0, 1, { args });
      const key = generateKeyPair();
      const pub = path.join(dir, 'release.pub');
      writeFileSync(pub, key.publicPem);
      for (const name of ['one', 'two']) {
        const h = await makeFleetHost(name, ['web'], pub);
        hosts.push(h);
        const token = await controlCli(db, [...args, 'token', 'create', '--json']);
        assert.equal(token.code, 0, token.stderr + token.stdout);
        // A first: both hosts heartbeat to A while it lives.
        const r = await agentctl(h.host, ['enroll', '--control-plane', a.url, '--control-plane', b.url, '--token', token.json.token as string, '--json']);
        assert.equal(r.code, 0, r.stderr);
        h.nodeId = r.json.nodeId as string;
        h.agent = startAgentProcess(h.host);
      }
      const [one, two] = hosts as [FleetHost, FleetHost];
      const file = path.join(dir, 'web-1.0.0.tgz');
      writeFileSync(file, appRelease('web', '1.0.0', 0, { probe: 'none', stableMs: 300 }));
      const added = await addRelease(store, { app: 'web', version: '1.0.0', file, url: null, baseUrl: a.url, privateKeyPem: key.privatePem, expiresDays: 30, artifactsDir: artifacts });
      assert.equal(new URL(added.payload.url).origin, new URL(a.url).origin, "the manifest names A's URL");
      await waitUntil('both nodes to report web', 30_000, async () => {
        const nodes = await store.read((tx) => tx.nodes.list());
        return nodes.length === 2 && nodes.every((n) => n.apps.some((x) => x.name === 'web')) ? true : undefined;
      });
      // The bake holds the batch until A is gone; the default budget of 0 failures would halt on any.
      const run = await startRun(store, 'web', '1.0.0', { canary: [one.nodeId], batch: '1', bakeMs: 10_000 });
      const canary = await waitUntil('the canary to confirm', 60_000, async () => {
        const v = await view(store);
        return v.counts.confirmed === 1 || v.status !== 'running' ? v : undefined;
      });
      assert.equal(canary.counts.confirmed, 1, JSON.stringify(canary.nodes));
      assert.equal(await currentOn(one, 'web'), '1.0.0');
      assert.equal(canary.nodes.find((n) => n.nodeId === two.nodeId)?.state, 'pending', 'the batch waits for the bake');
      await a.kill();
      const ended = await waitUntil('the run to end', 120_000, async () => {
        const v = await view(store);
        return v.status === 'running' ? undefined : v;
      });
      assert.equal(ended.status, 'succeeded', `${JSON.stringify(ended.haltReason)} ${JSON.stringify(ended.nodes)}`);
      assert.equal(ended.id, run.id);
      assert.equal(ended.counts.confirmed, 2);
      assert.equal(await currentOn(two, 'web'), '1.0.0');
    } finally {
      for (const h of hosts) await removeFleetHost(h).catch(() => undefined);
      await a.kill();
      await b?.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
