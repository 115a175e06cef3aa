// Going back to a known-good version across a fleet (docs/design.md §18), with a real steward-control
// and three hosts, each a real helper and agent in its own root. The fleet runs web 1.5.0; going
// back to 1.1.0 is a downgrade, which each host takes only with a downgrade authorization signed
// by a release key it trusts for web. Without one the run halts and says which command to run;
// whatever is written straight into the control plane's database (a desired entry with no
// authorization, one signed by another app's key, an expired one) is refused by every host and
// nothing moves; with `release allow-downgrade`, the rollout goes back in batches.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../src/control/store/open-store.js';
import { forgeRun } from '../helpers/forge-run.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { appRelease } from '../fixtures/app-releases.js';
import { controlNodes, controlReceipts, controlRuns } from '../helpers/control-read.js';
import { controlJson, startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { helperStatus } from '../helpers/helper-status.js';
import { enrollAndStart, makeFleetHost, removeFleetHost, type FleetHost } from '../helpers/fleet-hosts.js';

const DAY = 86_400_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-downgrade-'));
const db = path.join(dir, 'control.db');
const hosts: FleetHost[] = [];
let control: (Daemon & { url: string }) | null = null;

after(async () => {
  for (const h of hosts) await removeFleetHost(h);
  await control?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ctl = (...args: string[]): Promise<any> => controlJson(db, args);

async function runEnded(): Promise<any> {
  await waitUntil('the run to end', 90_000, async () => {
    const [run] = await controlRuns(db, 'web');
    return run && run.status !== 'running' ? true : undefined;
  });
  return (await ctl('rollout', 'status', 'web')).runs[0];
}

// What web is on each host: current and the floor.
async function webOnHosts(): Promise<string[]> {
  const out: string[] = [];
  for (const h of hosts) {
    const web = (await helperStatus(h.host.root)).apps.find((a: { name: string }) => a.name === 'web');
    out.push(`${web.current}/${web.highestActive}`);
  }
  return out;
}


test('a fleet on 1.5.0 goes back to 1.1.0 in batches only with a signed downgrade authorization; forged, misdirected or expired ones written into the database move nothing', { timeout: 400_000 }, async () => {
  control = await startControlDaemon(db, 0, 1);
  const web = await ctl('keys', 'create', '--out', path.join(dir, 'keys'), '--name', 'web');
  const api = await ctl('keys', 'create', '--out', path.join(dir, 'keys'), '--name', 'api');
  for (const name of ['h-1', 'h-2', 'h-3']) {
    const h = await makeFleetHost(name, ['web'], web.publicKeyFile);
    // The api key is trusted on every host too, for api: a key the host trusts, not for web.
    const apiDir = path.join(h.host.paths.trustedKeysDir, 'api');
    mkdirSync(apiDir, { recursive: true, mode: 0o755 });
    copyFileSync(api.publicKeyFile, path.join(apiDir, 'release.pub'));
    hosts.push(h);
  }
  for (const h of hosts) await enrollAndStart(h, control.url, (await ctl('token', 'create')).token);
  for (const v of ['1.1.0', '1.5.0']) {
    const file = path.join(dir, `web-${v}.tgz`);
    // No port: three hosts share one machine; the release must stay up for stableMs.
    writeFileSync(file, appRelease('web', v, 0, { probe: 'none', stableMs: 300 }));
    await ctl('release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', web.privateKeyFile);
  }
  await waitUntil('every node to heartbeat its apps', 30_000, async () => ((await controlNodes(db)).filter((n) => n.apps.length > 0).length === 3 ? true : undefined));

  await ctl('rollout', 'start', 'web', '1.5.0', '--bake', '0', '--batch', '100%');
  assert.equal((await runEnded()).status, 'succeeded');
  assert.deepEqual(await webOnHosts(), ['1.5.0/1.5.0', '1.5.0/1.5.0', '1.5.0/1.5.0']);

  // 1. Back to 1.1.0 without an authorization: the canary refuses, the run halts, and the halt
  // says what to run.
  await ctl('rollout', 'start', 'web', '1.1.0', '--bake', '0', '--max-refused', '0');
  const refused = await runEnded();
  assert.equal(refused.status, 'halted', JSON.stringify(refused, null, 2));
  assert.equal(refused.haltReason.code, 'TOO_MANY_REFUSED');
  assert.match(refused.haltReason.message, /DOWNGRADE_REFUSED.*steward-control release allow-downgrade web 1\.1\.0 --key/);
  const canary = refused.nodes.find((x: { state: string }) => x.state === 'refused');
  assert.equal(canary?.reason, 'DOWNGRADE_REFUSED');
  assert.deepEqual(await webOnHosts(), ['1.5.0/1.5.0', '1.5.0/1.5.0', '1.5.0/1.5.0']);

  // 2. Desired entries written straight into the database, to every node at once: with no
  // authorization, one signed by api's key, and an expired one signed by web's key. Every host
  // refuses each, saying why, and nothing moves.
  const sign = (keyFile: string, payload: unknown) => signEnvelope(DOMAINS.downgrade, payload, parsePrivateKey(readFileSync(keyFile, 'utf8')));
  const forgeries: Array<[string, Envelope | null, RegExp]> = [
    ['no authorization', null, /no downgrade authorization came with the request/],
    ["api's key", sign(api.privateKeyFile, { app: 'web', version: '1.1.0', notAfter: Date.now() + 7 * DAY }), new RegExp(`signed by key ${api.keyId}, which is not trusted for app web`)],
    ['an expired one', sign(web.privateKeyFile, { app: 'web', version: '1.1.0', notAfter: Date.now() - 60_000 }), /expired at/],
  ];
  let n = 0;
  for (const [what, authorization, why] of forgeries) {
    const ids = await forgeRun(db, hosts.map((h) => h.nodeId), ++n, '1.1.0', authorization);
    const receipts = await waitUntil(`every host to answer the forged run (${what})`, 60_000, async () => {
      const mine = (await controlReceipts(db, 'web')).filter((r) => ids.includes(r.attemptId));
      return mine.length === ids.length ? mine : undefined;
    });
    // Each a signed `refused` receipt of its host, saying which check failed and what to run.
    for (const r of receipts) {
      assert.deepEqual([r.outcome, r.reasonCode], ['refused', 'DOWNGRADE_REFUSED'], `${what}: ${JSON.stringify(r)}`);
      assert.match(r.reasonMessage ?? '', why, `${what} on ${r.nodeId}`);
      assert.match(r.reasonMessage ?? '', /steward-control release allow-downgrade web 1\.1\.0/, `${what} on ${r.nodeId}`);
    }
    assert.deepEqual(await webOnHosts(), ['1.5.0/1.5.0', '1.5.0/1.5.0', '1.5.0/1.5.0'], `${what}: nothing moved`);
  }
  const store = await openStore(db);
  await store.write(async (tx) => {
    const active = await tx.runs.active('web');
    if (active) await tx.runs.end(active.id, 'stopped', undefined, await tx.now());
  });
  await store.close();

  // 3. The operator authorizes the way back with web's release key; the rollout goes back in
  // batches (a canary, then one node at a time), and each host's floor is now 1.1.0.
  const allowed = await ctl('release', 'allow-downgrade', 'web', '1.1.0', '--key', web.privateKeyFile, '--expires-days', '2');
  assert.deepEqual([allowed.app, allowed.version, allowed.keyId, allowed.replaced], ['web', '1.1.0', web.keyId, true], 'it replaced the expired one written in step 2');
  await ctl('rollout', 'start', 'web', '1.1.0', '--bake', '0', '--batch', '1');
  const back = await runEnded();
  assert.equal(back.status, 'succeeded', JSON.stringify(back, null, 2));
  assert.deepEqual(back.nodes.map((x: { state: string }) => x.state), ['confirmed', 'confirmed', 'confirmed']);
  assert.deepEqual([...new Set(back.nodes.map((x: { batch: number }) => x.batch))].sort(), [0, 1, 2], 'a canary, then batches of one');
  assert.deepEqual(await webOnHosts(), ['1.1.0/1.1.0', '1.1.0/1.1.0', '1.1.0/1.1.0']);
  const confirmed = (await controlReceipts(db, 'web')).filter((r) => back.nodes.some((x: { attemptId: string }) => x.attemptId === r.attemptId));
  assert.equal(confirmed.length, 3);
  for (const r of confirmed) assert.deepEqual([r.outcome, r.fromVersion, r.targetVersion, r.reasonCode], ['active', '1.5.0', '1.1.0', 'DOWNGRADE_AUTHORIZED']);
  const audit = (await ctl('audit')).entries.filter((e: { action: string }) => e.action === 'release.allow-downgrade');
  assert.equal(audit.length, 1);
});
