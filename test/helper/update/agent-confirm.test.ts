import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { releaseFileSchema } from '../../../src/core/release-schemas.js';
import { checkReleaseFile } from '../../../src/helper/stage/check-release-file.js';
import { AgentConfirms, wantsConfirm } from '../../../src/helper/update/agent-confirm.js';
import { systemClock } from '../../../src/platform/clock.js';
import { readProcIdentity } from '../../../src/platform/proc-identity.js';
import { probeSpecOf } from '../../../src/helper/update/app-process.js';
import { makeHost } from '../../helpers/host.js';

// When the helper probes a start by the new agent's confirm (docs/design.md §14), and which release
// files may ask for it.

const agentRelease = releaseFileSchema.parse({ name: 'steward-agent', version: '1.0.0', health: { confirm: 'heartbeat', timeoutMs: 60_000 } });

test('a steward-agent release asking for the confirm is probed by it on an enrolled host, and the old way on one that is not', async (t) => {
  const host = makeHost({ apps: { 'steward-agent': { runner: 'unit', unit: 'steward-agent.service' } } });
  t.after(() => host.cleanup());
  assert.equal(await wantsConfirm(host.paths, 'steward-agent', agentRelease), false, 'no state/node.json: nothing to heartbeat to');
  assert.deepEqual(probeSpecOf(agentRelease, false), { timeoutMs: 60_000, stableMs: 5000 });
  mkdirSync(path.dirname(host.paths.nodeState), { recursive: true });
  writeFileSync(host.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: 'node-1' }));
  assert.equal(await wantsConfirm(host.paths, 'steward-agent', agentRelease), true);
  assert.deepEqual(probeSpecOf(agentRelease, true), { confirm: 'heartbeat', timeoutMs: 60_000, stableMs: 5000 });
  writeFileSync(host.paths.nodeState, '{"schemaVersion": 99}');
  assert.equal(await wantsConfirm(host.paths, 'steward-agent', agentRelease), true, 'an unreadable node.json counts as enrolled');
  const old = releaseFileSchema.parse({ name: 'steward-agent', version: '1.0.0', health: { stableMs: 5000 } });
  assert.equal(await wantsConfirm(host.paths, 'steward-agent', old), false, 'a release that does not ask is probed the old way');
});

test('only a steward-agent release may ask for the confirm, and never together with an http or tcp probe', async (t) => {
  const host = makeHost({ apps: { web: { runner: 'process' } } });
  t.after(() => host.cleanup());
  const tree = path.join(host.scratch, 'tree');
  mkdirSync(tree);
  writeFileSync(path.join(tree, 'steward-release.json'), JSON.stringify({ name: 'web', version: '1.0.0', start: { command: ['true'] }, health: { confirm: 'heartbeat' } }));
  await assert.rejects(checkReleaseFile(tree, { app: 'web', version: '1.0.0', appConfig: { runner: 'process' } as never }), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'RELEASE_INVALID');
    assert.match(err.message, /health\.confirm, which only steward-agent releases may have/);
    return true;
  });
  const both = releaseFileSchema.safeParse({ name: 'steward-agent', version: '1.0.0', health: { confirm: 'heartbeat', tcp: '127.0.0.1:1' } });
  assert.equal(both.success, false);
  assert.equal(releaseFileSchema.safeParse({ name: 'steward-agent', version: '1.0.0', health: { confirm: 'always' } }).success, false);
});

test("a trial's wait takes the confirm of the agent's running process only, of a heartbeat sent since the wait began", async (t) => {
  const agent = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  t.after(() => {
    agent.kill('SIGKILL');
    other.kill('SIGKILL');
  });
  await Promise.all([once(agent, 'spawn'), once(other, 'spawn')]);
  const confirms = new AgentConfirms(systemClock);
  let settled = false;
  const confirmed = confirms.expectTrial('2.0.0', 'attempt-1', () => readProcIdentity(agent.pid!)).then(() => (settled = true));
  const from = (pid: number) => ({ ok: true as const, peer: { pid, uid: 0, gid: 0 } });
  const now = Date.now();
  await assert.rejects(confirms.confirm(from(other.pid!), { seq: 1, sentAt: now }), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'FORBIDDEN');
    assert.match(err.message, new RegExp(`the confirm came from pid ${other.pid}, not from the running steward-agent process \\(pid ${agent.pid}\\)`));
    return true;
  });
  await assert.rejects(confirms.confirm(from(agent.pid!), { seq: 1, sentAt: now - 60_000 }), { code: 'BAD_REQUEST' });
  assert.equal(settled, false);
  const a = await confirms.confirm(from(agent.pid!), { seq: 2, sentAt: Date.now() });
  assert.deepEqual(a, { app: 'steward', version: '2.0.0', attemptId: 'attempt-1', pid: agent.pid });
  await confirmed;
  await assert.rejects(confirms.confirm(from(agent.pid!), { seq: 3, sentAt: Date.now() }), { code: 'FORBIDDEN' }, 'the wait is over once taken');
});
