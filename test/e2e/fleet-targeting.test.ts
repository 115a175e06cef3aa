// Fleet targeting end to end (docs/design.md §11): a real steward-control and three hosts, each a real
// helper and agent in its own root; one host does not run the app. The rollout that used to
// pick that host as its canary, get no receipt, sit `issued` for the whole verdict timeout and
// halt now leaves it not-targeted and ends succeeded within a few heartbeats; a labelled
// rollout touches only its labels.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { appRelease } from '../fixtures/app-releases.js';
import { controlNodes, controlRuns } from '../helpers/control-read.js';
import { controlJson, startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { currentOn, enrollAndStart, makeFleetHost, removeFleetHost, type FleetHost } from '../helpers/fleet-hosts.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-targeting-'));
const db = path.join(dir, 'control.db');
const hosts: FleetHost[] = [];
let control: (Daemon & { url: string }) | null = null;

after(async () => {
  for (const h of hosts) await removeFleetHost(h);
  await control?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ctl = (...args: string[]): Promise<any> => controlJson(db, args);

// Starts a rollout and waits (bounded far below the verdict timeout) for it to end; the run as
// the CLI prints it. The wait reads the store in this process (control-read.ts).
async function rollout(...args: string[]): Promise<any> {
  await ctl('rollout', 'start', ...args, '--bake', '0', '--verdict-timeout', '10m');
  await waitUntil('the rollout to end', 60_000, async () => {
    const [run] = await controlRuns(db, 'web');
    return run && ['succeeded', 'halted', 'stopped'].includes(run.status) ? true : undefined;
  });
  return (await ctl('rollout', 'status', 'web')).runs[0];
}

test('three hosts, one without the app: it is not-targeted, the run succeeds; a labelled rollout touches only its labels', { timeout: 240_000 }, async () => {
  control = await startControlDaemon(db, 0, 1);
  const keys = await ctl('keys', 'create', '--out', path.join(dir, 'keys'));
  for (const [name, apps] of [['staging-1', ['web']], ['prod-1', ['web']], ['prod-db', ['cache']]] as const) hosts.push(await makeFleetHost(name, [...apps], keys.publicKeyFile));
  const [staging, prod, noWeb] = hosts as [FleetHost, FleetHost, FleetHost];
  for (const h of hosts) await enrollAndStart(h, control.url, (await ctl('token', 'create', '--label', `env=${h.name.startsWith('staging') ? 'staging' : 'prod'}`)).token);
  for (const v of ['1.0.0', '1.1.0']) {
    const file = path.join(dir, `web-${v}.tgz`);
    // No port: three hosts share one machine; the release must stay up for stableMs.
    writeFileSync(file, appRelease('web', v, 0, { probe: 'none', stableMs: 300 }));
    await ctl('release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', keys.privateKeyFile);
  }
  await waitUntil('every node to heartbeat its apps', 30_000, async () => ((await controlNodes(db)).filter((n) => n.apps.length > 0).length === 3 ? true : undefined));

  const first = await rollout('web', '1.0.0');
  assert.equal(first.status, 'succeeded', JSON.stringify(first, null, 2));
  const stateOf = (run: any, h: FleetHost) => run.nodes.find((n: { nodeId: string }) => n.nodeId === h.nodeId);
  assert.deepEqual([stateOf(first, noWeb).state, stateOf(first, noWeb).reason, stateOf(first, noWeb).attemptId], ['not-targeted', 'APP_NOT_ON_NODE', null]);
  assert.deepEqual([stateOf(first, staging).state, stateOf(first, prod).state], ['confirmed', 'confirmed']);
  assert.deepEqual([first.counts.targeted, first.counts.notTargeted, first.counts.confirmed], [2, 1, 2]);
  assert.deepEqual([await currentOn(staging, 'web'), await currentOn(prod, 'web')], ['1.0.0', '1.0.0']);

  const second = await rollout('web', '1.1.0', '--select', 'env=staging');
  assert.equal(second.status, 'succeeded', JSON.stringify(second, null, 2));
  assert.deepEqual(second.nodes.map((n: { nodeId: string }) => n.nodeId), [staging.nodeId]);
  assert.equal(await currentOn(staging, 'web'), '1.1.0');
  // A few heartbeats later prod still runs 1.0.0: it was never asked.
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(await currentOn(prod, 'web'), '1.0.0');
  const asked = (await ctl('receipts')).receipts.filter((r: { targetVersion: string }) => r.targetVersion === '1.1.0').map((r: { nodeId: string }) => r.nodeId);
  assert.deepEqual(asked, [staging.nodeId]);
  assert.deepEqual((await ctl('rollout', 'status', 'web')).runs[0].behind.map((b: { nodeId: string }) => b.nodeId), [], 'nobody is behind the staging run');
});
