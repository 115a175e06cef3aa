import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type HelperProcess } from '../helpers/host.js';
import { appStatus, waitReady } from '../helpers/app-processes.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000, keepReleases: 3 }) } });
let helper: HelperProcess;
let port: number;

before(async () => {
  port = await freePort();
  helper = await host.startHelper();
});

const versionsDir = () => path.join(host.paths.appsDir, 'web/versions');
const staged = () => readdirSync(versionsDir()).sort();

async function ok(args: string[]) {
  const r = await agentctl(host, [...args, '--json']);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r;
}

test('after an active outcome only keepReleases versions stay, current and previous always among them', { timeout: 60_000 }, async () => {
  await ok(['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port)]);
  for (const v of ['2.0.0', '3.0.0', '4.0.0']) await ok(['stage', 'web', v, ...releaseArgs(host.scratch, 'web', v, port)]);
  assert.deepEqual(staged(), ['1.0.0', '2.0.0', '3.0.0', '4.0.0'], 'staging alone prunes nothing');

  await ok(['update', 'web', '5.0.0', ...releaseArgs(host.scratch, 'web', '5.0.0', port)]);
  const web = await appStatus(host, 'web');
  assert.equal(web.current, '5.0.0');
  assert.equal(web.previous, '1.0.0');
  // Three kept: current 5.0.0, previous 1.0.0 (the lowest, kept anyway), then the highest other.
  assert.deepEqual(staged(), ['1.0.0', '4.0.0', '5.0.0']);
  assert.equal(await fetchVersion(port), '5.0.0');
});

test('agentctl prune --keep 2 keeps only current and previous', { timeout: 60_000 }, async () => {
  const r = await ok(['prune', 'web', '--keep', '2']);
  assert.deepEqual(r.json.removed, ['4.0.0']);
  assert.deepEqual(staged(), ['1.0.0', '5.0.0']);
  const again = await ok(['prune', 'web', '--keep', '2']);
  assert.deepEqual(again.json.removed, [], 'nothing left to prune is success');
  const tooFew = await agentctl(host, ['prune', 'web', '--keep', '1', '--json']);
  assert.equal(tooFew.code, 2, 'fewer than 2 is a usage error');
});

test("prune removes a version's marker before its tree", { timeout: 60_000 }, async () => {
  await ok(['stage', 'web', '3.0.0', ...releaseArgs(host.scratch, 'web', '3.0.0', port), '--allow-downgrade']);
  // A helper that dies between the marker's removal and the tree's.
  await helper.stop();
  helper = await host.startHelper({ STEWARD_FAULTS: 'during-prune' });
  const r = await agentctl(host, ['prune', 'web', '--keep', '2', '--json']);
  assert.equal(r.code, 5, 'the helper died mid-prune: ' + r.stdout);
  await helper.kill();
  assert.match(helper.stderr(), /steward-fault-kill during-prune/);
  const tree = path.join(versionsDir(), '3.0.0');
  assert.ok(existsSync(tree), 'the tree was not removed yet');
  assert.equal(existsSync(path.join(tree, '.steward-valid')), false, 'but its marker was already gone');

  // A tree without a marker is never used and is cleaned at the next start.
  helper = await host.startHelper();
  await waitReady(host);
  assert.deepEqual(staged(), ['1.0.0', '5.0.0']);
  assert.equal(await fetchVersion(port), '5.0.0');
});
