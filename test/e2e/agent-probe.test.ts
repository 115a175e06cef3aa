import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RELEASE_FILE_NAME } from '../../src/core/release-schemas.js';
import { preBundleCheckout } from '../fixtures/pre-bundle-agent-release.js';
import { freePort } from '../fixtures/app-releases.js';
import { makeAgentAppHost, writeAgentReleaseFile, type AgentAppHost } from '../helpers/agent-app-host.js';

// The probe of a new steward-agent (docs/design.md §14): not "the same process for 5 s" but, within the
// release's health.timeoutMs, the new agent's confirm over helper.sock of a heartbeat the control
// plane answered. Real helper, real agents (this checkout's bundle, and the agent as steward made
// it before the bundle, which knows no confirm), a fake control plane, the `process` runner.

// Short enough for a test, long enough for a first heartbeat on a loaded machine.
const HEALTH = { confirm: 'heartbeat', timeoutMs: 8000, stableMs: 1000 };

async function waitFor<T>(what: string, check: () => T | null | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The receipt the control plane holds for `version` (the agent relayed it).
function cpReceipt(a: AgentAppHost, version: string) {
  return waitFor(`the control plane to hold a receipt for steward-agent ${version}`, () => a.cp.storedReceipts().find((r) => r.app === 'steward-agent' && r.targetVersion === version));
}

// The agent versions of the heartbeats the control plane answered 200.
function answeredVersions(a: AgentAppHost): string[] {
  return a.cp.heartbeats.filter((h) => h.status === 200).map((h) => h.payload.agentVersion);
}

test('a new agent is active only once it confirmed an answered heartbeat; one that cannot heartbeat or never confirms is rolled back', { timeout: 300_000 }, async (t) => {
  // Compiled while the first releases run (tsc over that commit's src/).
  const preBundle = preBundleCheckout();
  t.after(async () => (await preBundle.catch(() => null))?.cleanup());
  const a = await makeAgentAppHost();
  t.after(() => a.cleanup());

  await t.test('a good agent release becomes active on its confirm, with a receipt the new agent relays', async () => {
    const r = await a.update('1.0.0', await a.agentTree('1.0.0', { health: HEALTH }));
    assert.equal(r.json?.outcome, 'active', r.stdout + r.stderr);
    assert.match(a.helper.stderr(), /confirm taken app=steward-agent version=1\.0\.0/);
    const receipt = await cpReceipt(a, '1.0.0');
    assert.equal(receipt.outcome, 'active');
  });

  await t.test('an agent release with a wrong control-plane URL baked in cannot heartbeat and is rolled back (AGENT_UNCONFIRMED)', async () => {
    const tree = await a.agentTree('1.0.1', { health: HEALTH, extraArgs: ['--config', 'wrong-control-plane.json'] });
    // Nothing listens on this port once freePort has closed it.
    const dead = `http://127.0.0.1:${await freePort()}`;
    writeFileSync(path.join(tree, 'wrong-control-plane.json'), JSON.stringify({ apps: { 'steward-agent': { runner: 'process' } }, controlPlane: { url: dead } }));
    const r = await a.update('1.0.1', tree);
    assert.equal(r.json?.outcome, 'rolled-back', r.stdout + r.stderr);
    assert.equal(r.json.reason.code, 'AGENT_UNCONFIRMED', r.json.reason.message);
    assert.match(r.json.reason.message, /confirmed no heartbeat/);
    assert.equal(r.code, 4, 'the rolled-back exit code');
    const st = await a.agentctl(['status', 'steward-agent', '--json']);
    assert.equal(st.json.apps[0].current, '1.0.0');
    assert.ok(!answeredVersions(a).includes('1.0.1'), 'the broken agent never reached the control plane');
    const state = JSON.parse(readFileSync(path.join(a.host.paths.stateDir, 'steward-agent.json'), 'utf8'));
    assert.equal(state.quarantine['1.0.1']?.failures, 1, 'quarantined as any failed probe');
    const receipt = await cpReceipt(a, '1.0.1');
    assert.equal(receipt.outcome, 'rolled-back');
    assert.equal(receipt.reason?.code, 'AGENT_UNCONFIRMED');
    assert.equal(receipt.rollbackHealthy, true, 'the old agent confirmed again');
  });

  await t.test('the recovery of an agent update the helper died in probes the old agent by its confirm, which the recovering helper takes', async () => {
    const tree = await a.agentTree('1.0.5', { health: HEALTH, extraArgs: ['--config', 'wrong-control-plane.json'] });
    writeFileSync(path.join(tree, 'wrong-control-plane.json'), JSON.stringify({ apps: { 'steward-agent': { runner: 'process' } }, controlPlane: { url: `http://127.0.0.1:${await freePort()}` } }));
    const update = a.update('1.0.5', tree);
    const helper = a.helper;
    await waitFor('the helper to start agent 1.0.5', () => /started app=steward-agent version=1\.0\.5 /.test(helper.stderr()));
    await a.restartHelper();
    await update;
    const journal = JSON.parse(readFileSync(path.join(a.host.paths.journalDir, 'steward-agent.json'), 'utf8'));
    assert.equal(journal.outcome, 'rolled-back', JSON.stringify(journal));
    assert.equal(journal.reason.code, 'ACTIVATION_INTERRUPTED');
    assert.match(a.helper.stderr(), /confirm taken app=steward-agent version=1\.0\.0 /);
    assert.equal((await a.agentctl(['status', 'steward-agent', '--json'])).json.apps[0].current, '1.0.0');
  });

  await t.test('an agent release that heartbeats but never confirms (the agent from before the confirm) is rolled back when its release asks for the confirm', async () => {
    const tree = path.join(a.host.scratch, 'pre-bundle-1.0.2');
    await (await preBundle).layOutAgentTree(tree, '1.0.2');
    writeAgentReleaseFile(a.host, tree, '1.0.2', HEALTH);
    const r = await a.update('1.0.2', tree);
    assert.equal(r.json?.outcome, 'rolled-back', r.stdout + r.stderr);
    assert.equal(r.json.reason.code, 'AGENT_UNCONFIRMED', r.json.reason.message);
    assert.ok(answeredVersions(a).includes('1.0.2'), 'it did heartbeat');
    assert.equal((await a.agentctl(['status', 'steward-agent', '--json'])).json.apps[0].current, '1.0.0');
  });

  await t.test('an agent release from before the confirm, whose release file asks for none, is still probed the old way and becomes active', async () => {
    const tree = path.join(a.host.scratch, 'pre-bundle-1.0.3');
    await (await preBundle).layOutAgentTree(tree, '1.0.3');
    const own = JSON.parse(readFileSync(path.join(tree, RELEASE_FILE_NAME), 'utf8'));
    assert.equal(own.health.confirm, undefined, 'that commit wrote no confirm');
    writeAgentReleaseFile(a.host, tree, '1.0.3', own.health);
    const r = await a.update('1.0.3', tree);
    assert.equal(r.json?.outcome, 'active', r.stdout + r.stderr);
    await waitFor('a heartbeat from agent 1.0.3', () => answeredVersions(a).includes('1.0.3'));
  });
});
